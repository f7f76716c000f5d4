// Shared machinery of the op bindings (ops_*.cpp, array_methods.cpp): the operand type that
// accepts Python scalars, axis / shape argument types, and `def_op`, which registers one lambda
// both as mx.<name> and, optionally, as the array method array.<name>.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "mlx/ops.h"
#include "python/src/convert.h"
#include "python/src/docstrings.h"

namespace mlx::core::python {

// An operand as Python passed it: an array or a Python scalar (bool, int, float, complex). The
// scalar stays unconverted so that it can be typed weakly against another operand.
struct ScalarOrArray {
  nanobind::object obj;
  array get(std::optional<Dtype> like = std::nullopt) const { return to_operand(obj, like); }
};

bool is_scalar_or_array(nanobind::handle h);

}  // namespace mlx::core::python

namespace nanobind::detail {

template <>
struct type_caster<::mlx::core::python::ScalarOrArray> {
  NB_TYPE_CASTER(::mlx::core::python::ScalarOrArray, const_name("scalar | array"))

  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    if (!::mlx::core::python::is_scalar_or_array(src)) {
      return false;
    }
    value.obj = borrow(src);
    return true;
  }
  static handle from_cpp(const ::mlx::core::python::ScalarOrArray& v, rv_policy, cleanup_list*) {
    return v.obj.inc_ref();
  }
};

}  // namespace nanobind::detail

namespace mlx::core::python {

using IntOrInts = std::variant<int, std::vector<int>>;
using OptAxes = std::optional<IntOrInts>;

// `axis` of a reduction: None means every axis.
std::vector<int> to_axes(const OptAxes& axis, int ndim);
std::vector<int> to_ints(const IntOrInts& v);
nanobind::tuple to_tuple(const std::vector<array>& xs);

// `h` as a T, or a TypeError naming the op and what it expected.
[[noreturn]] void throw_type_error(nanobind::handle h, const char* op, const char* expected);
template <typename T>
T cast_arg(nanobind::handle h, const char* op, const char* expected) {
  try {
    return nanobind::cast<T>(h);
  } catch (const nanobind::cast_error&) {
    throw_type_error(h, op, expected);
  }
}

// Where an op is registered: mx.<name>(<arg>, ...) and, with `method`, array.<name>(...).
// Arguments are all nameable (nanobind has no positional-only marker for named arguments).
struct OpSpec {
  const char* name;
  bool method = false;
  const char* arg = "a";
};

namespace detail {

template <typename... Ts>
struct TypeList {};
template <typename F>
struct RestArgs : RestArgs<decltype(&F::operator())> {};
template <typename C, typename R, typename A0, typename... As>
struct RestArgs<R (C::*)(A0, As...) const> {
  using type = TypeList<As...>;
};

// `f` with its leading `const array&` parameter widened to accept Python scalars.
template <typename F, typename... As>
auto accept_scalar(F f, TypeList<As...>) {
  return [f](const ScalarOrArray& a, As... as) { return f(a.get(), std::forward<As>(as)...); };
}

}  // namespace detail

// Registers `f(const array& a, ..., StreamOrDevice s)` with the argument annotations `extra`
// for everything between `a` and `stream`; appends the keyword-only `stream=None` (and the `*`
// when `extra` has none).
template <typename F, typename... Extra>
void def_op(nanobind::module_& m, const OpSpec& op, F f, const Extra&... extra) {
  namespace nb = nanobind;
  auto reg = [&](const auto&... args) {
    auto g = detail::accept_scalar(f, typename detail::RestArgs<F>::type{});
    const char* doc = docstring(op.name);
    m.def(op.name, g, nb::arg(op.arg), args..., doc);
    if (op.method) {
      nb::cpp_function_def(f, nb::scope(nb::type<array>()), nb::name(op.name), nb::is_method(),
                           args..., doc);
    }
  };
  if constexpr ((std::is_same_v<Extra, nanobind::kw_only> || ...)) {
    reg(extra..., nb::arg("stream") = nb::none());
  } else {
    reg(extra..., nb::kw_only(), nb::arg("stream") = nb::none());
  }
}

using BinaryFn = array (*)(const array&, const array&, StreamOrDevice);
// mx.<name>(a, b, /, *, stream=None) with scalars typed weakly against the other operand.
void def_binary(nanobind::module_& m, const char* name, BinaryFn fn);

// The areas of the functional API; init_ops calls each.
void init_ops_creation(nanobind::module_& m);
void init_ops_elementwise(nanobind::module_& m);
void init_ops_reduction(nanobind::module_& m);
void init_ops_shape(nanobind::module_& m);
void init_ops_indexing(nanobind::module_& m);
void init_ops_linalg(nanobind::module_& m);
void init_array_methods(nanobind::module_& m);

}  // namespace mlx::core::python
