// Products (matmul, addmm, tensordot, inner, outer, kron, vecdot, einsum) and graph ops
// (depends, result_type).
#include "python/src/mixed_precision.h"
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

// matmul in the mixed-precision compute dtype when one is active.
array matmul_mixed(const array& a, const array& b, StreamOrDevice s) {
  return matmul(in_compute_dtype(a), in_compute_dtype(b), s);
}

}  // namespace

void init_ops_linalg(nb::module_& m) {
  def_binary(m, "matmul", &matmul_mixed);
  def_binary(m, "inner", &inner);
  def_binary(m, "outer", &outer);
  def_binary(m, "kron", &kron);
  def_op(
      m, {"addmm", false, "c"},
      [](const array& c, const array& a, const array& b, float alpha, float beta,
         StreamOrDevice s) {
        return addmm(in_compute_dtype(c), in_compute_dtype(a), in_compute_dtype(b), alpha, beta, s);
      },
      "a"_a, "b"_a, "alpha"_a = 1.0f, "beta"_a = 1.0f);
  // The context manager of mixed_precision.h; the previous dtype comes back on exit.
  struct MixedPrecision {
    Dtype dtype;
    std::optional<Dtype> saved;
  };
  nb::class_<MixedPrecision>(m, "_MixedPrecisionContext")
      .def("__enter__",
           [](MixedPrecision& c) {
             c.saved = mixed_precision_dtype();
             mixed_precision_dtype() = c.dtype;
             return c.dtype;
           })
      .def("__exit__", [](MixedPrecision& c, nb::args) { mixed_precision_dtype() = c.saved; });
  m.def(
      "mixed_precision",
      [](Dtype dtype) {
        if (!is_floating_point(dtype)) {
          throw nb::type_error("[mixed_precision] dtype must be a floating-point type.");
        }
        return MixedPrecision{dtype, std::nullopt};
      },
      "dtype"_a = bfloat16,
      "mixed_precision(dtype=bfloat16)\n\nA context manager (an extension of this project, not "
      "in MLX) for mixed-precision compute: inside it, matrix products (``matmul``, ``@``, "
      "``addmm``) and every ``nn.Module`` call compute in ``dtype``, while parameters, optimizer "
      "state and gradients keep their own dtype (float32) - the policy of "
      "``Module.set_compute_dtype``, applied to everything in the block.\n\nExample:\n    >>> "
      "with mx.mixed_precision(mx.bfloat16):\n    ...     loss, grads = loss_and_grad(model, x, "
      "y)\n    >>> grads['w'].dtype  # float32, like the parameters");
  m.def(
      "_mixed_precision_dtype", []() { return mixed_precision_dtype(); },
      "The dtype of the active mixed_precision context, or None (used by mlx.nn).");
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
      "subscripts"_a, "operands"_a, "stream"_a = nb::none(), docstring("einsum"));
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
      "subscripts"_a, "operands"_a, docstring("einsum_path"));
  m.def(
      "depends",
      [](const ArrayOrList& inputs, const ArrayOrList& dependencies) -> nb::object {
        auto out = depends(as_list(inputs), as_list(dependencies));
        return std::holds_alternative<array>(inputs) ? nb::cast(out[0]) : nb::cast(out);
      },
      "inputs"_a, "dependencies"_a, docstring("depends"));
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
      "arrays_and_dtypes"_a, docstring("result_type"));
}

}  // namespace mlx::core::python
