// Products (matmul, addmm, tensordot, inner, outer, kron, vecdot, einsum) and graph ops
// (depends, result_type).
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mlx::core::python {

namespace {

// tensordot's axes: a count of trailing / leading axes, or the axes of a and of b.
using TensordotAxes = std::variant<int, std::pair<IntOrInts, IntOrInts>>;

// An array or a list of arrays, as depends takes and returns them.
using ArrayOrList = std::variant<array, std::vector<array>>;

std::vector<array> as_list(const ArrayOrList& x) {
  if (auto* a = std::get_if<array>(&x)) {
    return {*a};
  }
  return std::get<std::vector<array>>(x);
}

// The operands of einsum(subscripts, *operands), which MLX takes as arrays only.
std::vector<array> einsum_operands(const nb::args& args, const char* op) {
  std::vector<array> out;
  for (nb::handle h : args) {
    out.push_back(cast_arg<array>(h, op, "arrays"));
  }
  return out;
}

}  // namespace

void init_ops_linalg(nb::module_& m) {
  def_binary(m, "matmul", &matmul);
  def_binary(m, "inner", &inner);
  def_binary(m, "outer", &outer);
  def_binary(m, "kron", &kron);
  def_op(
      m, {"addmm", false, "c"},
      [](const array& c, const array& a, const array& b, float alpha, float beta,
         StreamOrDevice s) { return addmm(c, a, b, alpha, beta, s); },
      "a"_a, "b"_a, "alpha"_a = 1.0f, "beta"_a = 1.0f);
  def_op(
      m, {"tensordot"},
      [](const array& a, const array& b, const TensordotAxes& axes, StreamOrDevice s) {
        if (auto* n = std::get_if<int>(&axes)) {
          return tensordot(a, b, *n, s);
        }
        auto& [axes_a, axes_b] = std::get<std::pair<IntOrInts, IntOrInts>>(axes);
        return tensordot(a, b, to_ints(axes_a), to_ints(axes_b), s);
      },
      "b"_a, "axes"_a = 2);
  def_op(
      m, {"vecdot"},
      [](const array& a, const ScalarOrArray& b, int axis, StreamOrDevice s) {
        return vecdot(a, b.get(a.dtype()), axis, s);
      },
      "b"_a, nb::kw_only(), "axis"_a = -1);
  m.def(
      "einsum",
      [](const std::string& subscripts, const nb::args& operands, StreamOrDevice s) {
        return einsum(subscripts, einsum_operands(operands, "einsum"), s);
      },
      "subscripts"_a, "operands"_a, "stream"_a = nb::none());
  m.def(
      "einsum_path",
      [](const std::string& subscripts, const nb::args& operands) {
        auto [path, info] = einsum_path(subscripts, einsum_operands(operands, "einsum_path"));
        nb::list steps;
        for (auto& step : path) {
          nb::list positions;
          for (int p : step) {
            positions.append(p);
          }
          steps.append(nb::tuple(positions));
        }
        return nb::make_tuple(steps, info);
      },
      "subscripts"_a, "operands"_a);
  m.def(
      "depends",
      [](const ArrayOrList& inputs, const ArrayOrList& dependencies) -> nb::object {
        auto out = depends(as_list(inputs), as_list(dependencies));
        return std::holds_alternative<array>(inputs) ? nb::cast(out[0]) : nb::cast(out);
      },
      "inputs"_a, "dependencies"_a);
  m.def(
      "result_type",
      [](nb::args arrays_and_dtypes) {
        std::optional<Dtype> t;
        for (nb::handle h : arrays_and_dtypes) {
          Dtype d = nb::isinstance<Dtype>(h)
                        ? nb::cast<Dtype>(h)
                        : cast_arg<array>(h, "result_type", "arrays or dtypes").dtype();
          t = t ? promote_types(*t, d) : d;
        }
        if (!t) {
          throw std::invalid_argument("[result_type] Expected at least one array or dtype.");
        }
        return *t;
      },
      "arrays_and_dtypes"_a);
}

}  // namespace mlx::core::python
