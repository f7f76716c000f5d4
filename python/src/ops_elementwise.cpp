// Elementwise ops: unary math, binary arithmetic / comparison / bitwise, where, clip, isclose.
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mlx::core::python {

namespace {

using UnaryFn = array (*)(const array&, StreamOrDevice);

struct Unary {
  const char* name;
  UnaryFn fn;
  bool method = false;
};

const Unary kUnary[] = {
    {"abs", &mlx::core::abs, true},
    {"negative", &negative},
    {"sign", &sign},
    {"square", &square, true},
    {"sqrt", &mlx::core::sqrt, true},
    {"rsqrt", &rsqrt, true},
    {"reciprocal", &reciprocal, true},
    {"exp", &mlx::core::exp, true},
    {"expm1", &mlx::core::expm1},
    {"log", &mlx::core::log, true},
    {"log2", &mlx::core::log2, true},
    {"log10", &mlx::core::log10, true},
    {"log1p", &mlx::core::log1p, true},
    {"sin", &mlx::core::sin, true},
    {"cos", &mlx::core::cos, true},
    {"tan", &mlx::core::tan},
    {"arcsin", &arcsin},
    {"arccos", &arccos},
    {"arctan", &arctan},
    {"sinh", &mlx::core::sinh},
    {"cosh", &mlx::core::cosh},
    {"tanh", &mlx::core::tanh},
    {"arcsinh", &arcsinh},
    {"arccosh", &arccosh},
    {"arctanh", &arctanh},
    {"erf", &mlx::core::erf},
    {"erfinv", &erfinv},
    {"sigmoid", &sigmoid},
    // Not MLX API: the fused kernels behind nn.gelu & co, hence the underscore.
    {"_gelu", &gelu},
    {"_gelu_approx", &gelu_approx},
    {"_silu", &silu},
    {"degrees", &degrees},
    {"radians", &radians},
    {"floor", &mlx::core::floor},
    {"ceil", &mlx::core::ceil},
    {"trunc", &mlx::core::trunc},
    {"logical_not", &logical_not},
    {"bitwise_invert", &bitwise_invert},
    {"conjugate", &conjugate},
    {"conj", &conj, true},
    {"real", &real},
    {"imag", &imag},
    {"isnan", &mlx::core::isnan},
    {"isinf", &mlx::core::isinf},
    {"isposinf", &isposinf},
    {"isneginf", &isneginf},
    {"isfinite", &mlx::core::isfinite},
    {"stop_gradient", &stop_gradient},
};

const std::pair<const char*, BinaryFn> kBinary[] = {
    {"add", &add},
    {"subtract", &subtract},
    {"multiply", &multiply},
    {"divide", &divide},
    {"floor_divide", &floor_divide},
    {"remainder", &remainder},
    {"power", &power},
    {"maximum", &maximum},
    {"minimum", &minimum},
    {"equal", &equal},
    {"not_equal", &not_equal},
    {"less", &less},
    {"less_equal", &less_equal},
    {"greater", &greater},
    {"greater_equal", &greater_equal},
    {"logical_and", &logical_and},
    {"logical_or", &logical_or},
    {"logical_xor", &logical_xor},
    {"logaddexp", &logaddexp},
    {"arctan2", &arctan2},
    {"bitwise_and", &bitwise_and},
    {"bitwise_or", &bitwise_or},
    {"bitwise_xor", &bitwise_xor},
    {"left_shift", &left_shift},
    {"right_shift", &right_shift},
    // Not MLX API: the activations' vjps g f'(x) as one kernel, taking (x, g).
    {"_gelu_vjp", &gelu_vjp},
    {"_gelu_approx_vjp", &gelu_approx_vjp},
    {"_silu_vjp", &silu_vjp},
};

// isclose / allclose share their signature.
using CloseFn = array (*)(const array&, const array&, double, double, bool, StreamOrDevice);

void def_close(nb::module_& m, const char* name, CloseFn fn) {
  m.def(
      name,
      [fn](const ScalarOrArray& a, const ScalarOrArray& b, double rtol, double atol, bool equal_nan,
           StreamOrDevice s) {
        auto [x, y] = to_operands(a.obj, b.obj);
        return fn(x, y, rtol, atol, equal_nan, s);
      },
      "a"_a, "b"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, nb::kw_only(), "equal_nan"_a = false,
      "stream"_a = nb::none(), docstring(name));
}

}  // namespace

void init_ops_elementwise(nb::module_& m) {
  for (const auto& u : kUnary) {
    def_op(m, {u.name, u.method},
           [fn = u.fn](const array& a, StreamOrDevice s) { return fn(a, s); });
  }
  for (const auto& [name, fn] : kBinary) {
    def_binary(m, name, fn);
  }
  m.def(
      "divmod",
      [](const ScalarOrArray& a, const ScalarOrArray& b, StreamOrDevice s) {
        auto [x, y] = to_operands(a.obj, b.obj);
        return to_tuple(divmod(x, y, s));
      },
      "a"_a, "b"_a, nb::kw_only(), "stream"_a = nb::none(), docstring("divmod"));
  def_op(m, {"positive"}, [](const array& a, StreamOrDevice s) { return positive(a, s); });
  def_op(
      m, {"round", true},
      [](const array& a, int decimals, StreamOrDevice s) { return round(a, decimals, s); },
      "decimals"_a = 0);
  def_op(
      m, {"nan_to_num"},
      [](const array& a, float nan, std::optional<float> posinf, std::optional<float> neginf,
         StreamOrDevice s) { return nan_to_num(a, nan, posinf, neginf, s); },
      "nan"_a = 0.0f, "posinf"_a = nb::none(), "neginf"_a = nb::none());
  def_op(
      m, {"contiguous"},
      [](const array& a, bool allow_col_major, StreamOrDevice s) {
        return contiguous(a, allow_col_major, s);
      },
      "allow_col_major"_a = false);
  // Not MLX API: the name the project's documents use for contiguous.
  m.attr("ascontiguous") = m.attr("contiguous");
  m.def(
      "where",
      [](const ScalarOrArray& condition, const ScalarOrArray& x, const ScalarOrArray& y,
         StreamOrDevice s) {
        auto [a, b] = to_operands(x.obj, y.obj);
        return where(condition.get(), a, b, s);
      },
      "condition"_a, "x"_a, "y"_a, nb::kw_only(), "stream"_a = nb::none(), docstring("where"));
  def_op(
      m, {"clip"},
      [](const array& a, const std::optional<ScalarOrArray>& a_min,
         const std::optional<ScalarOrArray>& a_max, StreamOrDevice s) {
        auto bound = [&](const std::optional<ScalarOrArray>& v) -> std::optional<array> {
          return v ? std::optional<array>(v->get(a.dtype())) : std::nullopt;
        };
        return clip(a, bound(a_min), bound(a_max), s);
      },
      "a_min"_a.none(), "a_max"_a.none());
  // The array API's names for the same functions.
  const std::pair<const char*, const char*> kAliases[] = {
      {"acos", "arccos"},
      {"asin", "arcsin"},
      {"atan", "arctan"},
      {"acosh", "arccosh"},
      {"asinh", "arcsinh"},
      {"atanh", "arctanh"},
      {"atan2", "arctan2"},
      {"pow", "power"},
      {"bitwise_left_shift", "left_shift"},
      {"bitwise_right_shift", "right_shift"},
  };
  for (const auto& [alias, name] : kAliases) {
    m.attr(alias) = m.attr(name);
  }
  def_op(m, {"to_fp8", false, "x"}, [](const array& x, StreamOrDevice s) { return to_fp8(x, s); });
  def_op(
      m, {"from_fp8", false, "x"},
      [](const array& x, Dtype dtype, StreamOrDevice s) { return from_fp8(x, dtype, s); },
      "dtype"_a = bfloat16);
  def_close(m, "isclose", &isclose);
  def_close(m, "allclose", &allclose);
  m.def(
      "array_equal",
      [](const ScalarOrArray& a, const ScalarOrArray& b, bool equal_nan, StreamOrDevice s) {
        auto [x, y] = to_operands(a.obj, b.obj);
        return array_equal(x, y, equal_nan, s);
      },
      "a"_a, "b"_a, "equal_nan"_a = false, nb::kw_only(), "stream"_a = nb::none(),
      docstring("array_equal"));
}

}  // namespace mlx::core::python
