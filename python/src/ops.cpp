// The functional API of mlx.core (mx.add, mx.sum, ...) and the array methods that mirror it:
// MLX's names, argument names and defaults, with Python scalars accepted wherever an array is.
// Each area lives in its own ops_<area>.cpp; this file holds the shared helpers.
#include <nanobind/stl/string.h>

#include <numeric>

#include "mlx/utils.h"
#include "python/src/bindings.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;

namespace mlx::core::python {

bool is_scalar_or_array(nb::handle h) {
  return nb::isinstance<array>(h) || PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) ||
         PyFloat_Check(h.ptr()) || PyComplex_Check(h.ptr());
}

std::vector<int> to_ints(const IntOrInts& v) {
  if (auto* i = std::get_if<int>(&v)) {
    return {*i};
  }
  return std::get<std::vector<int>>(v);
}

std::vector<int> to_axes(const OptAxes& axis, int ndim) {
  if (axis) {
    return to_ints(*axis);
  }
  std::vector<int> all(ndim);
  std::iota(all.begin(), all.end(), 0);
  return all;
}

nb::tuple to_tuple(const std::vector<array>& xs) {
  nb::list l;
  for (auto& x : xs) {
    l.append(nb::cast(x));
  }
  return nb::tuple(l);
}

void throw_type_error(nb::handle h, const char* op, const char* expected) {
  throw nb::type_error(msg("[", op, "] Expected ", expected, "; got an object of type ",
                           nb::cast<std::string>(nb::str(h.type().attr("__name__"))), ".")
                           .c_str());
}

void def_binary(nb::module_& m, const char* name, BinaryFn fn) {
  m.def(
      name,
      [fn](const ScalarOrArray& a, const ScalarOrArray& b, StreamOrDevice s) {
        auto [x, y] = to_operands(a.obj, b.obj);
        return fn(x, y, s);
      },
      nb::arg("a"), nb::arg("b"), nb::kw_only(), nb::arg("stream") = nb::none(), docstring(name));
}

}  // namespace mlx::core::python

void init_ops(nb::module_& m) {
  using namespace mlx::core::python;
  init_ops_creation(m);
  init_ops_elementwise(m);
  init_ops_reduction(m);
  init_ops_shape(m);
  init_ops_indexing(m);
  init_ops_linalg(m);
  init_array_methods(m);
}
