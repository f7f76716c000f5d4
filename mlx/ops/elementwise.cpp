#include "mlx/ops/elementwise.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "mlx/ops/creation.h"
#include "mlx/ops/graph.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/elementwise.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

Dtype at_least_float(Dtype t) { return is_inexact(t) ? t : float32; }

namespace {

array unary(UnaryOp op, const array& a, Dtype out_dtype, StreamOrDevice s) {
  return array(a.shape(), out_dtype, std::make_shared<Unary>(to_stream(s), op), {a});
}

// Applies a float math op, converting integer inputs to float32 first.
array float_unary(UnaryOp op, const array& a, StreamOrDevice s, bool allow_complex = true) {
  if (!allow_complex && is_complex(a.dtype())) {
    throw std::invalid_argument(msg("[", unary_op_name(op), "] Not supported for complex inputs."));
  }
  Dtype t = at_least_float(a.dtype());
  return unary(op, astype(a, t, s), t, s);
}

// Broadcasts both inputs to a common shape after casting them to `in_dtype`.
array binary(BinaryOp op, const array& a, const array& b, Dtype in_dtype, Dtype out_dtype,
             const char* name, StreamOrDevice s) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  array x = astype(a, in_dtype, s);
  array y = astype(b, in_dtype, s);
  if (detail::in_shapeless_tracing()) {
    x = dynamic_broadcast({x, y}, s);
    y = dynamic_broadcast({y, x}, s);
  } else {
    x = broadcast_to(x, shape, s);
    y = broadcast_to(y, shape, s);
  }
  return array(std::move(shape), out_dtype, std::make_shared<Binary>(to_stream(s), op),
               {std::move(x), std::move(y)});
}

array arithmetic(BinaryOp op, const array& a, const array& b, const char* name, StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  return binary(op, a, b, t, t, name, s);
}

array comparison(BinaryOp op, const array& a, const array& b, const char* name, StreamOrDevice s) {
  return binary(op, a, b, promote_types(a.dtype(), b.dtype()), bool_, name, s);
}

// A real float op: integer operands become float32, complex ones are refused.
array real_float_binary(BinaryOp op, const array& a, const array& b, const char* name,
                        StreamOrDevice s) {
  Dtype t = at_least_float(promote_types(a.dtype(), b.dtype()));
  if (is_complex(t)) {
    throw std::invalid_argument(msg("[", name, "] Not supported for complex inputs."));
  }
  return binary(op, a, b, t, t, name, s);
}

array integer_binary(BinaryOp op, const array& a, const array& b, const char* name,
                     StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (is_inexact(t)) {
    throw std::invalid_argument(msg("[", name,
                                    "] Only integer and boolean inputs are supported; got ",
                                    a.dtype(), " and ", b.dtype(), "."));
  }
  return binary(op, a, b, t, t, name, s);
}

}  // namespace

array abs(const array& a, StreamOrDevice s) {
  if (is_unsigned(a.dtype())) {
    return a;
  }
  Dtype out = is_complex(a.dtype()) ? float32 : a.dtype();
  if (is_complex(a.dtype())) {
    return real(unary(UnaryOp::Abs, a, a.dtype(), s), s);
  }
  return unary(UnaryOp::Abs, a, out, s);
}

array negative(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_) {
    throw std::invalid_argument("[negative] The argument cannot be a boolean.");
  }
  return unary(UnaryOp::Negative, a, a.dtype(), s);
}
array operator-(const array& a) { return negative(a); }

array sign(const array& a, StreamOrDevice s) { return unary(UnaryOp::Sign, a, a.dtype(), s); }
array square(const array& a, StreamOrDevice s) { return unary(UnaryOp::Square, a, a.dtype(), s); }

array sqrt(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Sqrt, a, s); }
array rsqrt(const array& a, StreamOrDevice s) {
  if (is_complex(a.dtype())) {
    return reciprocal(sqrt(a, s), s);
  }
  return float_unary(UnaryOp::Rsqrt, a, s);
}
array reciprocal(const array& a, StreamOrDevice s) {
  Dtype t = at_least_float(a.dtype());
  return divide(array(1.0f, t), a, s);
}
array exp(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Exp, a, s); }
array expm1(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Expm1, a, s, false); }
array log(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Log, a, s); }
array log2(const array& a, StreamOrDevice s) {
  if (is_complex(a.dtype())) {
    return divide(log(a, s), array(std::numbers::ln2_v<float>), s);
  }
  return float_unary(UnaryOp::Log2, a, s);
}
array log10(const array& a, StreamOrDevice s) {
  if (is_complex(a.dtype())) {
    return divide(log(a, s), array(std::numbers::ln10_v<float>), s);
  }
  return float_unary(UnaryOp::Log10, a, s);
}
array log1p(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Log1p, a, s, false); }
array sin(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Sin, a, s); }
array cos(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Cos, a, s); }
array tan(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Tan, a, s); }
namespace {

// Complex inverse trigonometric and hyperbolic functions on complex64, composed from complex
// log and sqrt with the principal branches (C99's and NumPy's, signed zeros on the cuts
// included): the real and imaginary parts are handled separately wherever adding a real
// constant or multiplying by i would lose the sign of a zero.
array complex_from(const array& re, const array& im, StreamOrDevice s) {
  array pair = stack({astype(re, float32, s), astype(im, float32, s)}, -1, s);
  return squeeze(view(pair, complex64, s), -1, s);
}
array times_i(const array& z, StreamOrDevice s) {
  return complex_from(negative(imag(z, s), s), real(z, s), s);
}
array times_minus_i(const array& z, StreamOrDevice s) {
  return complex_from(imag(z, s), negative(real(z, s), s), s);
}
// z + c for a real constant c.
array plus_real(const array& z, float c, StreamOrDevice s) {
  return complex_from(add(real(z, s), array(c), s), imag(z, s), s);
}

// asinh(z) = log(z + sqrt(z^2 + 1)), on the right half-plane; asinh is odd, so the left one
// is mirrored (which avoids cancelling z against the square root there).
array complex_asinh(const array& z, StreamOrDevice s) {
  array mirror = less(real(z, s), array(0.0f), s);
  array w = where(mirror, negative(z, s), z, s);
  array r = log(add(w, sqrt(plus_real(multiply(w, w, s), 1.0f, s), s), s), s);
  return where(mirror, negative(r, s), r, s);
}
// asin(z) = -i asinh(i z)
array complex_asin(const array& z, StreamOrDevice s) {
  return times_minus_i(complex_asinh(times_i(z, s), s), s);
}
// atanh(z) = (log(1 + z) - log(1 - z)) / 2
array complex_atanh(const array& z, StreamOrDevice s) {
  array one_plus = plus_real(z, 1.0f, s);
  array one_minus = complex_from(subtract(array(1.0f), real(z, s), s), negative(imag(z, s), s), s);
  array d = subtract(log(one_plus, s), log(one_minus, s), s);
  return complex_from(multiply(real(d, s), array(0.5f), s), multiply(imag(d, s), array(0.5f), s),
                      s);
}
// acosh(z) = log(z + sqrt(z + 1) sqrt(z - 1))
array complex_acosh(const array& z, StreamOrDevice s) {
  array root = multiply(sqrt(plus_real(z, 1.0f, s), s), sqrt(plus_real(z, -1.0f, s), s), s);
  return log(add(z, root, s), s);
}

}  // namespace

array arcsin(const array& a, StreamOrDevice s) {
  return is_complex(a.dtype()) ? complex_asin(a, s) : float_unary(UnaryOp::ArcSin, a, s, false);
}
array arccos(const array& a, StreamOrDevice s) {
  if (is_complex(a.dtype())) {
    // acos(z) = pi/2 - asin(z)
    array w = complex_asin(a, s);
    return complex_from(subtract(array(static_cast<float>(std::numbers::pi / 2)), real(w, s), s),
                        negative(imag(w, s), s), s);
  }
  return float_unary(UnaryOp::ArcCos, a, s, false);
}
array arctan(const array& a, StreamOrDevice s) {
  // atan(z) = -i atanh(i z)
  return is_complex(a.dtype()) ? times_minus_i(complex_atanh(times_i(a, s), s), s)
                               : float_unary(UnaryOp::ArcTan, a, s, false);
}
array sinh(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Sinh, a, s); }
array cosh(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Cosh, a, s); }
array tanh(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Tanh, a, s); }
array arcsinh(const array& a, StreamOrDevice s) {
  return is_complex(a.dtype()) ? complex_asinh(a, s) : float_unary(UnaryOp::ArcSinh, a, s, false);
}
array arccosh(const array& a, StreamOrDevice s) {
  return is_complex(a.dtype()) ? complex_acosh(a, s) : float_unary(UnaryOp::ArcCosh, a, s, false);
}
array arctanh(const array& a, StreamOrDevice s) {
  return is_complex(a.dtype()) ? complex_atanh(a, s) : float_unary(UnaryOp::ArcTanh, a, s, false);
}
array erf(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Erf, a, s, false); }
array erfinv(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::ErfInv, a, s, false); }
array sigmoid(const array& a, StreamOrDevice s) {
  return float_unary(UnaryOp::Sigmoid, a, s, false);
}
array gelu(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Gelu, a, s, false); }
array gelu_approx(const array& a, StreamOrDevice s) {
  return float_unary(UnaryOp::GeluApprox, a, s, false);
}
array silu(const array& a, StreamOrDevice s) { return float_unary(UnaryOp::Silu, a, s, false); }

array degrees(const array& a, StreamOrDevice s) {
  Dtype t = at_least_float(a.dtype());
  return multiply(a, array(180.0 / std::numbers::pi, t), s);
}
array radians(const array& a, StreamOrDevice s) {
  Dtype t = at_least_float(a.dtype());
  return multiply(a, array(std::numbers::pi / 180.0, t), s);
}

namespace {
array rounding(UnaryOp op, const array& a, const char* name, StreamOrDevice s) {
  if (is_complex(a.dtype())) {
    throw std::invalid_argument(msg("[", name, "] Not supported for complex inputs."));
  }
  if (!is_floating_point(a.dtype())) {
    return a;
  }
  return unary(op, a, a.dtype(), s);
}
}  // namespace

array floor(const array& a, StreamOrDevice s) { return rounding(UnaryOp::Floor, a, "floor", s); }
array ceil(const array& a, StreamOrDevice s) { return rounding(UnaryOp::Ceil, a, "ceil", s); }
array trunc(const array& a, StreamOrDevice s) { return rounding(UnaryOp::Trunc, a, "trunc", s); }

array round(const array& a, int decimals, StreamOrDevice s) {
  if (decimals == 0) {
    if (!is_inexact(a.dtype())) {
      return a;
    }
    return unary(UnaryOp::Round, a, a.dtype(), s);
  }
  if (!is_inexact(a.dtype())) {
    return a;
  }
  array scale(std::pow(10.0, decimals), a.dtype() == float64 ? float64 : float32);
  return astype(divide(round(multiply(a, scale, s), 0, s), scale, s), a.dtype(), s);
}

array logical_not(const array& a, StreamOrDevice s) {
  return unary(UnaryOp::LogicalNot, a, bool_, s);
}
array operator!(const array& a) { return logical_not(a); }

array bitwise_invert(const array& a, StreamOrDevice s) {
  if (is_inexact(a.dtype())) {
    throw std::invalid_argument(msg(
        "[bitwise_invert] Only integer and boolean inputs are supported; got ", a.dtype(), "."));
  }
  return unary(UnaryOp::BitwiseInvert, a, a.dtype(), s);
}
array operator~(const array& a) { return bitwise_invert(a); }

array conjugate(const array& a, StreamOrDevice s) {
  return is_complex(a.dtype()) ? unary(UnaryOp::Conjugate, a, a.dtype(), s) : a;
}
array real(const array& a, StreamOrDevice s) {
  return is_complex(a.dtype()) ? unary(UnaryOp::Real, a, float32, s) : a;
}
array imag(const array& a, StreamOrDevice s) {
  return is_complex(a.dtype()) ? unary(UnaryOp::Imag, a, float32, s) : zeros_like(a, s);
}

array isnan(const array& a, StreamOrDevice s) { return unary(UnaryOp::IsNaN, a, bool_, s); }
array isinf(const array& a, StreamOrDevice s) { return unary(UnaryOp::IsInf, a, bool_, s); }
array isposinf(const array& a, StreamOrDevice s) { return unary(UnaryOp::IsPosInf, a, bool_, s); }
array isneginf(const array& a, StreamOrDevice s) { return unary(UnaryOp::IsNegInf, a, bool_, s); }
array isfinite(const array& a, StreamOrDevice s) { return unary(UnaryOp::IsFinite, a, bool_, s); }

array nan_to_num(const array& a, float nan, std::optional<float> posinf,
                 std::optional<float> neginf, StreamOrDevice s) {
  Dtype t = a.dtype();
  if (!is_floating_point(t)) {
    return a;
  }
  double big = finfo(t).max;
  array out = where(isnan(a, s), array(nan, t), a, s);
  out = where(isposinf(a, s), array(posinf ? *posinf : big, t), out, s);
  return where(isneginf(a, s), array(neginf ? *neginf : -big, t), out, s);
}

// The autodiff transforms give this its meaning; on its own it is the identity.
array add(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic(BinaryOp::Add, a, b, "add", s);
}
array subtract(const array& a, const array& b, StreamOrDevice s) {
  if (a.dtype() == bool_ && b.dtype() == bool_) {
    throw std::invalid_argument(
        "[subtract] Boolean subtraction is not supported; use logical_xor.");
  }
  return arithmetic(BinaryOp::Subtract, a, b, "subtract", s);
}
array multiply(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic(BinaryOp::Multiply, a, b, "multiply", s);
}
array divide(const array& a, const array& b, StreamOrDevice s) {
  Dtype t = at_least_float(promote_types(a.dtype(), b.dtype()));
  return binary(BinaryOp::Divide, a, b, t, t, "divide", s);
}
array floor_divide(const array& a, const array& b, StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (is_complex(t)) {
    throw std::invalid_argument("[floor_divide] Not supported for complex inputs.");
  }
  return binary(BinaryOp::FloorDivide, a, b, t, t, "floor_divide", s);
}
array remainder(const array& a, const array& b, StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (is_complex(t)) {
    throw std::invalid_argument("[remainder] Not supported for complex inputs.");
  }
  return binary(BinaryOp::Remainder, a, b, t, t, "remainder", s);
}
std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (is_complex(t)) {
    throw std::invalid_argument("[divmod] Not supported for complex inputs.");
  }
  Shape shape = broadcast_shapes(a.shape(), b.shape(), "divmod");
  array x = broadcast_to(astype(a, t, s), shape, s);
  array y = broadcast_to(astype(b, t, s), shape, s);
  return array::make_arrays({shape, shape}, {t, t}, std::make_shared<DivMod>(to_stream(s)), {x, y});
}
array power(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic(BinaryOp::Power, a, b, "power", s);
}
array maximum(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic(BinaryOp::Maximum, a, b, "maximum", s);
}
array minimum(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic(BinaryOp::Minimum, a, b, "minimum", s);
}
array equal(const array& a, const array& b, StreamOrDevice s) {
  return comparison(BinaryOp::Equal, a, b, "equal", s);
}
array not_equal(const array& a, const array& b, StreamOrDevice s) {
  return comparison(BinaryOp::NotEqual, a, b, "not_equal", s);
}
array less(const array& a, const array& b, StreamOrDevice s) {
  return comparison(BinaryOp::Less, a, b, "less", s);
}
array less_equal(const array& a, const array& b, StreamOrDevice s) {
  return comparison(BinaryOp::LessEqual, a, b, "less_equal", s);
}
array greater(const array& a, const array& b, StreamOrDevice s) {
  return comparison(BinaryOp::Greater, a, b, "greater", s);
}
array greater_equal(const array& a, const array& b, StreamOrDevice s) {
  return comparison(BinaryOp::GreaterEqual, a, b, "greater_equal", s);
}
array logical_and(const array& a, const array& b, StreamOrDevice s) {
  return binary(BinaryOp::LogicalAnd, a, b, bool_, bool_, "logical_and", s);
}
array logical_or(const array& a, const array& b, StreamOrDevice s) {
  return binary(BinaryOp::LogicalOr, a, b, bool_, bool_, "logical_or", s);
}
array logical_xor(const array& a, const array& b, StreamOrDevice s) {
  return binary(BinaryOp::NotEqual, a, b, bool_, bool_, "logical_xor", s);
}
array logaddexp(const array& a, const array& b, StreamOrDevice s) {
  return real_float_binary(BinaryOp::LogAddExp, a, b, "logaddexp", s);
}
array arctan2(const array& a, const array& b, StreamOrDevice s) {
  return real_float_binary(BinaryOp::ArcTan2, a, b, "arctan2", s);
}
array gelu_vjp(const array& x, const array& g, StreamOrDevice s) {
  return real_float_binary(BinaryOp::GeluVjp, x, g, "gelu_vjp", s);
}
array gelu_approx_vjp(const array& x, const array& g, StreamOrDevice s) {
  return real_float_binary(BinaryOp::GeluApproxVjp, x, g, "gelu_approx_vjp", s);
}
array silu_vjp(const array& x, const array& g, StreamOrDevice s) {
  return real_float_binary(BinaryOp::SiluVjp, x, g, "silu_vjp", s);
}
array bitwise_and(const array& a, const array& b, StreamOrDevice s) {
  return integer_binary(BinaryOp::BitwiseAnd, a, b, "bitwise_and", s);
}
array bitwise_or(const array& a, const array& b, StreamOrDevice s) {
  return integer_binary(BinaryOp::BitwiseOr, a, b, "bitwise_or", s);
}
array bitwise_xor(const array& a, const array& b, StreamOrDevice s) {
  return integer_binary(BinaryOp::BitwiseXor, a, b, "bitwise_xor", s);
}
array left_shift(const array& a, const array& b, StreamOrDevice s) {
  return integer_binary(BinaryOp::LeftShift, a, b, "left_shift", s);
}
array right_shift(const array& a, const array& b, StreamOrDevice s) {
  return integer_binary(BinaryOp::RightShift, a, b, "right_shift", s);
}

#define MLX_DEFINE_OPERATOR(OP, FN) \
  array operator OP(const array& a, const array& b) { return FN(a, b); }
MLX_DEFINE_OPERATOR(+, add)
MLX_DEFINE_OPERATOR(-, subtract)
MLX_DEFINE_OPERATOR(*, multiply)
MLX_DEFINE_OPERATOR(/, divide)
MLX_DEFINE_OPERATOR(%, remainder)
MLX_DEFINE_OPERATOR(==, equal)
MLX_DEFINE_OPERATOR(!=, not_equal)
MLX_DEFINE_OPERATOR(<, less)
MLX_DEFINE_OPERATOR(<=, less_equal)
MLX_DEFINE_OPERATOR(>, greater)
MLX_DEFINE_OPERATOR(>=, greater_equal)
MLX_DEFINE_OPERATOR(&&, logical_and)
MLX_DEFINE_OPERATOR(||, logical_or)
MLX_DEFINE_OPERATOR(&, bitwise_and)
MLX_DEFINE_OPERATOR(|, bitwise_or)
MLX_DEFINE_OPERATOR(^, bitwise_xor)
MLX_DEFINE_OPERATOR(<<, left_shift)
MLX_DEFINE_OPERATOR(>>, right_shift)
#undef MLX_DEFINE_OPERATOR

array where(const array& condition, const array& x, const array& y, StreamOrDevice s) {
  Shape shape = broadcast_shapes({condition.shape(), x.shape(), y.shape()}, "where");
  Dtype t = promote_types(x.dtype(), y.dtype());
  array c = astype(condition, bool_, s);
  array a = astype(x, t, s);
  array b = astype(y, t, s);
  return array(std::move(shape), t, std::make_shared<Select>(to_stream(s)),
               {dynamic_broadcast({c, a, b}, s), dynamic_broadcast({a, c, b}, s),
                dynamic_broadcast({b, c, a}, s)});
}

array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max,
           StreamOrDevice s) {
  if (!a_min && !a_max) {
    throw std::invalid_argument("[clip] At least one of a_min and a_max must be given.");
  }
  array out = a;
  if (a_min) {
    out = maximum(out, *a_min, s);
  }
  if (a_max) {
    out = minimum(out, *a_max, s);
  }
  return out;
}

array isclose(const array& a, const array& b, double rtol, double atol, bool equal_nan,
              StreamOrDevice s) {
  // |a - b| <= atol + rtol * |b|, with infinities equal only to themselves.
  array diff = abs(subtract(a, b, s), s);
  array tol = add(array(atol, float32), multiply(array(rtol, float32), abs(b, s), s), s);
  array out = less_equal(diff, tol, s);
  array any_inf = logical_or(isinf(a, s), isinf(b, s), s);
  out = where(any_inf, equal(a, b, s), out, s);
  if (equal_nan) {
    out = logical_or(out, logical_and(isnan(a, s), isnan(b, s), s), s);
  }
  return out;
}

}  // namespace mlx::core
