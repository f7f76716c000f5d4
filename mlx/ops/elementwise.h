// Elementwise ops with NumPy broadcasting and MLX's type promotion.
#pragma once

#include <optional>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// Unary.
array abs(const array& a, StreamOrDevice s = {});
array negative(const array& a, StreamOrDevice s = {});
array operator-(const array& a);
array sign(const array& a, StreamOrDevice s = {});
array square(const array& a, StreamOrDevice s = {});
array sqrt(const array& a, StreamOrDevice s = {});
array rsqrt(const array& a, StreamOrDevice s = {});
array reciprocal(const array& a, StreamOrDevice s = {});
array exp(const array& a, StreamOrDevice s = {});
array expm1(const array& a, StreamOrDevice s = {});
array log(const array& a, StreamOrDevice s = {});
array log2(const array& a, StreamOrDevice s = {});
array log10(const array& a, StreamOrDevice s = {});
array log1p(const array& a, StreamOrDevice s = {});
array sin(const array& a, StreamOrDevice s = {});
array cos(const array& a, StreamOrDevice s = {});
array tan(const array& a, StreamOrDevice s = {});
array arcsin(const array& a, StreamOrDevice s = {});
array arccos(const array& a, StreamOrDevice s = {});
array arctan(const array& a, StreamOrDevice s = {});
array sinh(const array& a, StreamOrDevice s = {});
array cosh(const array& a, StreamOrDevice s = {});
array tanh(const array& a, StreamOrDevice s = {});
array arcsinh(const array& a, StreamOrDevice s = {});
array arccosh(const array& a, StreamOrDevice s = {});
array arctanh(const array& a, StreamOrDevice s = {});
array erf(const array& a, StreamOrDevice s = {});
array erfinv(const array& a, StreamOrDevice s = {});
array sigmoid(const array& a, StreamOrDevice s = {});
// GELU, x Phi(x) with Phi the standard normal CDF (nn.gelu), GELU's tanh approximation
// x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2 (nn.gelu_approx) and SiLU x sigmoid(x)
// (nn.silu), each one kernel; their vjps (gelu_vjp & co, with the binary ops) are one kernel
// too. Extensions: MLX composes them from erf, tanh and sigmoid.
array gelu(const array& a, StreamOrDevice s = {});
array gelu_approx(const array& a, StreamOrDevice s = {});
array silu(const array& a, StreamOrDevice s = {});
array degrees(const array& a, StreamOrDevice s = {});
array radians(const array& a, StreamOrDevice s = {});
array floor(const array& a, StreamOrDevice s = {});
array ceil(const array& a, StreamOrDevice s = {});
array trunc(const array& a, StreamOrDevice s = {});
array round(const array& a, int decimals, StreamOrDevice s = {});
inline array round(const array& a, StreamOrDevice s = {}) { return round(a, 0, s); }
array logical_not(const array& a, StreamOrDevice s = {});
array operator!(const array& a);
array bitwise_invert(const array& a, StreamOrDevice s = {});
array operator~(const array& a);
array conjugate(const array& a, StreamOrDevice s = {});
inline array conj(const array& a, StreamOrDevice s = {}) { return conjugate(a, s); }
array real(const array& a, StreamOrDevice s = {});
array imag(const array& a, StreamOrDevice s = {});
array isnan(const array& a, StreamOrDevice s = {});
array isinf(const array& a, StreamOrDevice s = {});
array isposinf(const array& a, StreamOrDevice s = {});
array isneginf(const array& a, StreamOrDevice s = {});
array isfinite(const array& a, StreamOrDevice s = {});
array nan_to_num(const array& a, float nan = 0.0f, std::optional<float> posinf = std::nullopt,
                 std::optional<float> neginf = std::nullopt, StreamOrDevice s = {});

// Binary.
array add(const array& a, const array& b, StreamOrDevice s = {});
array subtract(const array& a, const array& b, StreamOrDevice s = {});
array multiply(const array& a, const array& b, StreamOrDevice s = {});
array divide(const array& a, const array& b, StreamOrDevice s = {});
array floor_divide(const array& a, const array& b, StreamOrDevice s = {});
array remainder(const array& a, const array& b, StreamOrDevice s = {});
std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s = {});
array power(const array& a, const array& b, StreamOrDevice s = {});
array maximum(const array& a, const array& b, StreamOrDevice s = {});
array minimum(const array& a, const array& b, StreamOrDevice s = {});
array equal(const array& a, const array& b, StreamOrDevice s = {});
array not_equal(const array& a, const array& b, StreamOrDevice s = {});
array less(const array& a, const array& b, StreamOrDevice s = {});
array less_equal(const array& a, const array& b, StreamOrDevice s = {});
array greater(const array& a, const array& b, StreamOrDevice s = {});
array greater_equal(const array& a, const array& b, StreamOrDevice s = {});
array logical_and(const array& a, const array& b, StreamOrDevice s = {});
array logical_or(const array& a, const array& b, StreamOrDevice s = {});
array logical_xor(const array& a, const array& b, StreamOrDevice s = {});
array logaddexp(const array& a, const array& b, StreamOrDevice s = {});
array arctan2(const array& a, const array& b, StreamOrDevice s = {});
// g f'(x) in one kernel for f = gelu, gelu_approx, silu (their vjps and jvps), e.g. gelu's
// f'(x) = Phi(x) + x phi(x) and silu's sigmoid(x) (1 + x (1 - sigmoid(x))); halves compute in
// float32 and round once. x and g broadcast together; integers become float32. Extensions.
array gelu_vjp(const array& x, const array& g, StreamOrDevice s = {});
array gelu_approx_vjp(const array& x, const array& g, StreamOrDevice s = {});
array silu_vjp(const array& x, const array& g, StreamOrDevice s = {});
array bitwise_and(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_or(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_xor(const array& a, const array& b, StreamOrDevice s = {});
array left_shift(const array& a, const array& b, StreamOrDevice s = {});
array right_shift(const array& a, const array& b, StreamOrDevice s = {});

// Ternary and composites.
array where(const array& condition, const array& x, const array& y, StreamOrDevice s = {});
array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max,
           StreamOrDevice s = {});
array isclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false, StreamOrDevice s = {});

// Operators; scalars on either side become arrays of their default dtype.
#define MLX_BINARY_OPERATOR(OP, FN)                  \
  array operator OP(const array& a, const array& b); \
  template <typename T>                              \
  array operator OP(T a, const array& b) {           \
    return FN(array(a), b);                          \
  }                                                  \
  template <typename T>                              \
  array operator OP(const array& a, T b) {           \
    return FN(a, array(b));                          \
  }
MLX_BINARY_OPERATOR(+, add)
MLX_BINARY_OPERATOR(-, subtract)
MLX_BINARY_OPERATOR(*, multiply)
MLX_BINARY_OPERATOR(/, divide)
MLX_BINARY_OPERATOR(%, remainder)
MLX_BINARY_OPERATOR(==, equal)
MLX_BINARY_OPERATOR(!=, not_equal)
MLX_BINARY_OPERATOR(<, less)
MLX_BINARY_OPERATOR(<=, less_equal)
MLX_BINARY_OPERATOR(>, greater)
MLX_BINARY_OPERATOR(>=, greater_equal)
MLX_BINARY_OPERATOR(&&, logical_and)
MLX_BINARY_OPERATOR(||, logical_or)
MLX_BINARY_OPERATOR(&, bitwise_and)
MLX_BINARY_OPERATOR(|, bitwise_or)
MLX_BINARY_OPERATOR(^, bitwise_xor)
MLX_BINARY_OPERATOR(<<, left_shift)
MLX_BINARY_OPERATOR(>>, right_shift)
#undef MLX_BINARY_OPERATOR

// The smallest inexact dtype that holds `t` (float32 for integers and bool).
Dtype at_least_float(Dtype t);

}  // namespace mlx::core
