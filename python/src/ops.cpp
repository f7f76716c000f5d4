// The functional API of mlx.core (mx.add, mx.sum, ...): MLX's names, argument names and
// defaults, with Python scalars accepted wherever an array is.
#include "mlx/ops.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace {

std::vector<int> axes_or_all(const std::optional<std::variant<int, std::vector<int>>>& axis,
                             const array& a) {
  if (!axis) {
    std::vector<int> all(a.ndim());
    for (int i = 0; i < a.ndim(); ++i)
      all[i] = i;
    return all;
  }
  if (auto* i = std::get_if<int>(&*axis))
    return {*i};
  return std::get<std::vector<int>>(*axis);
}

}  // namespace

void init_ops(nb::module_& m) {
  using Axes = std::optional<std::variant<int, std::vector<int>>>;
  m.def(
      "add",
      [](nb::handle a, nb::handle b, StreamOrDevice s) {
        auto [x, y] = to_operands(a, b);
        return add(x, y, s);
      },
      nb::arg("a"), nb::arg("b"), nb::kw_only(), nb::arg("stream") = nb::none());
  m.def(
      "multiply",
      [](nb::handle a, nb::handle b, StreamOrDevice s) {
        auto [x, y] = to_operands(a, b);
        return multiply(x, y, s);
      },
      nb::arg("a"), nb::arg("b"), nb::kw_only(), nb::arg("stream") = nb::none());
  m.def(
      "exp", [](nb::handle a, StreamOrDevice s) { return exp(to_operand(a), s); }, nb::arg("a"),
      nb::kw_only(), nb::arg("stream") = nb::none());
  m.def(
      "sum",
      [](const array& a, Axes axis, bool keepdims, StreamOrDevice s) {
        return sum(a, axes_or_all(axis, a), keepdims, s);
      },
      nb::arg("a"), nb::arg("axis") = nb::none(), nb::arg("keepdims") = false, nb::kw_only(),
      nb::arg("stream") = nb::none());
  m.def(
      "zeros",
      [](std::variant<int, std::vector<int>> shape, std::optional<Dtype> dtype, StreamOrDevice s) {
        Shape sh;
        if (auto* i = std::get_if<int>(&shape))
          sh = {*i};
        else
          for (int d : std::get<std::vector<int>>(shape))
            sh.push_back(d);
        return zeros(sh, dtype.value_or(float32), s);
      },
      nb::arg("shape"), nb::arg("dtype") = nb::none(), nb::kw_only(),
      nb::arg("stream") = nb::none());
}
