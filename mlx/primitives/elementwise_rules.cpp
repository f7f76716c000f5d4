// Transform rules of the elementwise primitives.
//
// Each differentiable op is described once by its linearization: `g` times the derivative at
// the primal. Elementwise derivatives are diagonal, so the same product serves as the jvp (g a
// tangent) and the vjp (g a cotangent).
//
// Complex numbers follow the bilinear (JAX) convention: the cotangent of a complex input pairs
// with its tangent as Re(c * t), without conjugation. Holomorphic ops then use c = g * f'(z)
// exactly like real ones; the linear maps transpose as
//   conjugate: c = conj(g);  real: c = g + 0i;  imag: c = -i g;
// and abs (real-valued, output stored as complex): jvp Re(conj(z) t) / |z|,
// vjp Re(g) conj(z) / |z|.
#include <cmath>
#include <complex>
#include <numbers>
#include <optional>
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/primitives/elementwise.h"
#include "mlx/transforms/rule_utils.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// A scalar of `like`'s dtype, so constants never promote the result.
array scalar(double v, const array& like) { return array(v, like.dtype()); }

Dtype unary_out_dtype(UnaryOp op, Dtype in) {
  switch (op) {
    case UnaryOp::LogicalNot:
    case UnaryOp::IsNaN:
    case UnaryOp::IsInf:
    case UnaryOp::IsPosInf:
    case UnaryOp::IsNegInf:
    case UnaryOp::IsFinite:
      return bool_;
    case UnaryOp::Real:
    case UnaryOp::Imag:
      return float32;
    case UnaryOp::Abs:  // complex abs keeps its dtype (the public op takes the real part)
    case UnaryOp::Negative:
    case UnaryOp::Sign:
    case UnaryOp::Square:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Exp:
    case UnaryOp::Expm1:
    case UnaryOp::Log:
    case UnaryOp::Log2:
    case UnaryOp::Log10:
    case UnaryOp::Log1p:
    case UnaryOp::Sin:
    case UnaryOp::Cos:
    case UnaryOp::Tan:
    case UnaryOp::ArcSin:
    case UnaryOp::ArcCos:
    case UnaryOp::ArcTan:
    case UnaryOp::Sinh:
    case UnaryOp::Cosh:
    case UnaryOp::Tanh:
    case UnaryOp::ArcSinh:
    case UnaryOp::ArcCosh:
    case UnaryOp::ArcTanh:
    case UnaryOp::Erf:
    case UnaryOp::ErfInv:
    case UnaryOp::Sigmoid:
    case UnaryOp::Gelu:
    case UnaryOp::GeluApprox:
    case UnaryOp::Silu:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
    case UnaryOp::BitwiseInvert:
    case UnaryOp::Conjugate:
      return in;
  }
  throw std::logic_error("[Unary] Unknown op.");
}

Dtype binary_out_dtype(BinaryOp op, Dtype in) {
  switch (op) {
    case BinaryOp::Equal:
    case BinaryOp::NotEqual:
    case BinaryOp::Less:
    case BinaryOp::LessEqual:
    case BinaryOp::Greater:
    case BinaryOp::GreaterEqual:
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
    case BinaryOp::NaNEqual:
      return bool_;
    case BinaryOp::Add:
    case BinaryOp::Subtract:
    case BinaryOp::Multiply:
    case BinaryOp::Divide:
    case BinaryOp::Remainder:
    case BinaryOp::FloorDivide:
    case BinaryOp::Power:
    case BinaryOp::Maximum:
    case BinaryOp::Minimum:
    case BinaryOp::LogAddExp:
    case BinaryOp::ArcTan2:
    case BinaryOp::BitwiseAnd:
    case BinaryOp::BitwiseOr:
    case BinaryOp::BitwiseXor:
    case BinaryOp::LeftShift:
    case BinaryOp::RightShift:
    case BinaryOp::GeluVjp:
    case BinaryOp::GeluApproxVjp:
    case BinaryOp::SiluVjp:
      return in;
  }
  throw std::logic_error("[Binary] Unknown op.");
}

// The primitive itself applied to new inputs (the public ops may cast or wrap the result).
array make_unary(UnaryOp op, const array& x, const Stream& s) {
  return array(x.shape(), unary_out_dtype(op, x.dtype()), std::make_shared<Unary>(s, op), {x});
}

array make_binary(BinaryOp op, const array& a, const array& b, const Stream& s) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), binary_op_name(op));
  array x = broadcast_to(a, shape, s);
  array y = broadcast_to(b, shape, s);
  Dtype t = binary_out_dtype(op, a.dtype());
  return array(std::move(shape), t, std::make_shared<Binary>(s, op), {std::move(x), std::move(y)});
}

// g times the derivative of `op` at x (y = op(x)), or nullopt where the derivative is zero.
// `transpose` selects the vjp where it differs from the jvp (the non-holomorphic complex ops).
std::optional<array> unary_linear(UnaryOp op, const array& g, const array& x, const array& y,
                                  bool transpose, const Stream& s) {
  auto sq = [&](const array& v) { return square(v, s); };
  auto one = scalar(1.0, x);
  switch (op) {
    case UnaryOp::Abs:
      if (is_complex(x.dtype())) {
        array re = transpose ? real(g, s) : real(multiply(conjugate(x, s), g, s), s);
        array dir = transpose ? conjugate(x, s) : one;
        return divide(multiply(astype(re, x.dtype(), s), dir, s), y, s);
      }
      return multiply(g, sign(x, s), s);
    case UnaryOp::Negative:
      return negative(g, s);
    case UnaryOp::Square:
      return multiply(g, multiply(scalar(2.0, x), x, s), s);
    case UnaryOp::Sqrt:
      return divide(g, multiply(scalar(2.0, y), y, s), s);
    case UnaryOp::Rsqrt:
      return multiply(g, divide(multiply(scalar(-0.5, y), y, s), x, s), s);
    case UnaryOp::Exp:
      return multiply(g, y, s);
    case UnaryOp::Expm1:
      return multiply(g, add(y, one, s), s);
    case UnaryOp::Log:
      return divide(g, x, s);
    case UnaryOp::Log2:
      return divide(g, multiply(x, scalar(std::numbers::ln2, x), s), s);
    case UnaryOp::Log10:
      return divide(g, multiply(x, scalar(std::numbers::ln10, x), s), s);
    case UnaryOp::Log1p:
      return divide(g, add(x, one, s), s);
    case UnaryOp::Sin:
      return multiply(g, cos(x, s), s);
    case UnaryOp::Cos:
      return multiply(g, negative(sin(x, s), s), s);
    case UnaryOp::Tan:
      return multiply(g, add(one, sq(y), s), s);
    case UnaryOp::ArcSin:
      return multiply(g, rsqrt(subtract(one, sq(x), s), s), s);
    case UnaryOp::ArcCos:
      return multiply(g, negative(rsqrt(subtract(one, sq(x), s), s), s), s);
    case UnaryOp::ArcTan:
      return divide(g, add(one, sq(x), s), s);
    case UnaryOp::Sinh:
      return multiply(g, cosh(x, s), s);
    case UnaryOp::Cosh:
      return multiply(g, sinh(x, s), s);
    case UnaryOp::Tanh:
      return multiply(g, subtract(one, sq(y), s), s);
    case UnaryOp::ArcSinh:
      return multiply(g, rsqrt(add(sq(x), one, s), s), s);
    case UnaryOp::ArcCosh:
      return multiply(g, rsqrt(subtract(sq(x), one, s), s), s);
    case UnaryOp::ArcTanh:
      return divide(g, subtract(one, sq(x), s), s);
    case UnaryOp::Erf: {
      array k = scalar(2.0 / std::sqrt(std::numbers::pi), x);
      return multiply(g, multiply(k, exp(negative(sq(x), s), s), s), s);
    }
    case UnaryOp::ErfInv: {
      array k = scalar(std::sqrt(std::numbers::pi) / 2.0, y);
      return multiply(g, multiply(k, exp(sq(y), s), s), s);
    }
    case UnaryOp::Sigmoid:
      return multiply(g, multiply(y, subtract(one, y, s), s), s);
    case UnaryOp::Gelu:
      return gelu_vjp(x, g, s);
    case UnaryOp::GeluApprox:
      return gelu_approx_vjp(x, g, s);
    case UnaryOp::Silu:
      return silu_vjp(x, g, s);
    case UnaryOp::Conjugate:
      return conjugate(g, s);
    case UnaryOp::Real:
      return transpose ? astype(g, x.dtype(), s) : real(g, s);
    case UnaryOp::Imag:
      if (transpose) {
        return multiply(astype(g, x.dtype(), s), array(std::complex<float>(0.0f, -1.0f)), s);
      }
      return imag(g, s);
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
    case UnaryOp::LogicalNot:
    case UnaryOp::BitwiseInvert:
    case UnaryOp::IsNaN:
    case UnaryOp::IsInf:
    case UnaryOp::IsPosInf:
    case UnaryOp::IsNegInf:
    case UnaryOp::IsFinite:
      return std::nullopt;
  }
  throw std::logic_error("[Unary] Unknown op.");
}

// f''(x) for the activation f whose vjp g f'(x) is `op` (a composite of primitives, so that it
// differentiates again).
array activation_second_derivative(BinaryOp op, const array& x, const Stream& s) {
  auto sq = [&](const array& v) { return square(v, s); };
  auto one = scalar(1.0, x);
  switch (op) {
    case BinaryOp::GeluVjp: {
      // d/dx (Phi(x) + x phi(x)) = phi(x) (2 - x^2), phi the standard normal density.
      array phi = multiply(scalar(1.0 / std::sqrt(2.0 * std::numbers::pi), x),
                           exp(multiply(scalar(-0.5, x), sq(x), s), s), s);
      return multiply(phi, subtract(scalar(2.0, x), sq(x), s), s);
    }
    case BinaryOp::GeluApproxVjp: {
      // With u = c (x + a x^3) and t = tanh(u), the derivative (1 + t) / 2 + x (1 - t^2) u' / 2
      // has derivative (1 - t^2) (u' + x (u'' - 2 t u'^2) / 2),
      // where u' = c (1 + 3 a x^2) and u'' = 6 a c x.
      constexpr double c = 0.79788456080286535588, a = 0.044715;
      array x2 = sq(x);
      array t = tanh(
          multiply(scalar(c, x), add(x, multiply(scalar(a, x), multiply(x2, x, s), s), s), s), s);
      array du = multiply(scalar(c, x), add(one, multiply(scalar(3 * a, x), x2, s), s), s);
      array d2u = multiply(scalar(6 * a * c, x), x, s);
      array inner = subtract(d2u, multiply(multiply(scalar(2.0, x), t, s), sq(du), s), s);
      array d = add(du, multiply(scalar(0.5, x), multiply(x, inner, s), s), s);
      return multiply(subtract(one, sq(t), s), d, s);
    }
    case BinaryOp::SiluVjp: {
      // d/dx sigma (1 + x (1 - sigma)) = sigma (1 - sigma) (2 + x (1 - 2 sigma)).
      array sig = sigmoid(x, s);
      array one_minus = subtract(one, sig, s);
      array tail = add(scalar(2.0, x), multiply(x, subtract(one_minus, sig, s), s), s);
      return multiply(multiply(sig, one_minus, s), tail, s);
    }
    default:
      throw std::logic_error("[Binary] Not an activation's vjp.");
  }
}

// g times the partial derivative of `op` in its input k (0: a, 1: b) at (a, b), with
// out = op(a, b); nullopt where that derivative is zero.
std::optional<array> binary_linear(BinaryOp op, int k, const array& g, const array& a,
                                   const array& b, const array& out, const Stream& s) {
  array zero = scalar(0.0, g);
  // Routes g to a where `a_wins`, to b elsewhere.
  auto route = [&](const array& a_wins) {
    return k == 0 ? where(a_wins, g, zero, s) : where(a_wins, zero, g, s);
  };
  switch (op) {
    case BinaryOp::Add:
      return g;
    case BinaryOp::Subtract:
      return k == 0 ? g : negative(g, s);
    case BinaryOp::Multiply:
      return multiply(g, k == 0 ? b : a, s);
    case BinaryOp::Divide:
      return k == 0 ? divide(g, b, s) : negative(divide(multiply(g, out, s), b, s), s);
    case BinaryOp::Remainder:
      return k == 0 ? g : negative(multiply(g, floor_divide(a, b, s), s), s);
    case BinaryOp::Power:
      if (k == 0) {
        array db = power(a, subtract(b, scalar(1.0, b), s), s);
        return multiply(g, multiply(b, db, s), s);
      }
      return multiply(g, multiply(log(a, s), out, s), s);
    case BinaryOp::Maximum:
      return route(greater_equal(a, b, s));
    case BinaryOp::Minimum:
      return route(less_equal(a, b, s));
    case BinaryOp::LogAddExp:
      return multiply(g, sigmoid(k == 0 ? subtract(a, b, s) : subtract(b, a, s), s), s);
    case BinaryOp::ArcTan2: {
      // atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2).
      array r2 = add(square(a, s), square(b, s), s);
      array num = k == 0 ? multiply(g, b, s) : negative(multiply(g, a, s), s);
      return divide(num, r2, s);
    }
    case BinaryOp::GeluVjp:
    case BinaryOp::GeluApproxVjp:
    case BinaryOp::SiluVjp:
      // out = b f'(a): d/da = b f''(a), and d/db = f'(a) makes the b part the op itself.
      if (k == 0) {
        return multiply(g, multiply(b, activation_second_derivative(op, a, s), s), s);
      }
      return make_binary(op, a, astype(g, a.dtype(), s), s);
    case BinaryOp::FloorDivide:
    case BinaryOp::Equal:
    case BinaryOp::NotEqual:
    case BinaryOp::Less:
    case BinaryOp::LessEqual:
    case BinaryOp::Greater:
    case BinaryOp::GreaterEqual:
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
    case BinaryOp::BitwiseAnd:
    case BinaryOp::BitwiseOr:
    case BinaryOp::BitwiseXor:
    case BinaryOp::LeftShift:
    case BinaryOp::RightShift:
    case BinaryOp::NaNEqual:
      return std::nullopt;
  }
  throw std::logic_error("[Binary] Unknown op.");
}

// Sum of the partial tangents; zeros of the output when every partial vanishes.
array sum_tangents(std::vector<std::optional<array>> parts, const Shape& shape, Dtype dtype,
                   const Stream& s) {
  std::optional<array> total;
  for (auto& p : parts) {
    if (p) {
      total = total ? add(*total, *p, s) : *p;
    }
  }
  return total ? *total : zeros(shape, dtype, s);
}

}  // namespace

// Unary

std::vector<array> Unary::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                              const std::vector<int>&) {
  const array& x = primals[0];
  array y = make_unary(op_, x, stream());  // lazy: only evaluated by rules that read it
  auto t = unary_linear(op_, tangents[0], x, y, false, stream());
  return {t ? *t : zeros(x.shape(), unary_out_dtype(op_, x.dtype()), stream())};
}

std::vector<array> Unary::vjp(const std::vector<array>& primals,
                              const std::vector<array>& cotangents, const std::vector<int>&,
                              const std::vector<array>& outputs) {
  const array& x = primals[0];
  auto c = unary_linear(op_, cotangents[0], x, outputs[0], true, stream());
  return {c ? *c : zeros_like(x, stream())};
}

std::pair<std::vector<array>, std::vector<int>> Unary::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  return {{make_unary(op_, inputs[0], stream())}, axes};
}

// Binary

std::vector<array> Binary::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  const array& a = primals[0];
  const array& b = primals[1];
  array out = make_binary(op_, a, b, stream());  // lazy: only evaluated by rules that read it
  std::vector<std::optional<array>> parts;
  for (size_t i = 0; i < argnums.size(); ++i) {
    parts.push_back(binary_linear(op_, argnums[i], tangents[i], a, b, out, stream()));
  }
  return {sum_tangents(std::move(parts), a.shape(), binary_out_dtype(op_, a.dtype()), stream())};
}

std::vector<array> Binary::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  std::vector<array> result;
  for (int k : argnums) {
    auto c = binary_linear(op_, k, cotangents[0], primals[0], primals[1], outputs[0], stream());
    result.push_back(c ? *c : zeros_like(primals[k], stream()));
  }
  return result;
}

std::pair<std::vector<array>, std::vector<int>> Binary::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  auto in = detail::align_batch(inputs, axes);
  return {{make_binary(op_, in[0], in[1], stream())}, {0}};
}

// DivMod: the quotient is piecewise constant; the remainder differentiates like Remainder.

std::vector<array> DivMod::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  const array& a = primals[0];
  const array& b = primals[1];
  std::vector<std::optional<array>> parts;
  for (size_t i = 0; i < argnums.size(); ++i) {
    parts.push_back(
        argnums[i] == 0
            ? tangents[i]
            : negative(multiply(tangents[i], floor_divide(a, b, stream()), stream()), stream()));
  }
  return {zeros(a.shape(), a.dtype(), stream()),
          sum_tangents(std::move(parts), a.shape(), a.dtype(), stream())};
}

std::vector<array> DivMod::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  // d remainder / db = -quotient, which is the first output.
  std::vector<array> result;
  for (int k : argnums) {
    const array& g = cotangents[1];
    result.push_back(k == 0 ? g : negative(multiply(g, outputs[0], stream()), stream()));
  }
  return result;
}

std::pair<std::vector<array>, std::vector<int>> DivMod::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  auto in = detail::align_batch(inputs, axes);
  return {divmod(in[0], in[1], stream()), {0, 0}};
}

// Select: where(condition, x, y); the condition gets no derivative.

std::vector<array> Select::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  const array& cond = primals[0];
  Dtype t = primals[1].dtype();
  std::optional<array> tx, ty;
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] == 1) {
      tx = tangents[i];
    } else if (argnums[i] == 2) {
      ty = tangents[i];
    }
  }
  if (!tx && !ty) {
    return {zeros(cond.shape(), t, stream())};
  }
  array zero(0.0, t);
  return {where(cond, tx ? *tx : zero, ty ? *ty : zero, stream())};
}

std::vector<array> Select::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  const array& g = cotangents[0];
  array zero(0.0, g.dtype());
  std::vector<array> result;
  for (int k : argnums) {
    if (k == 0) {
      result.push_back(zeros_like(primals[0], stream()));
    } else {
      result.push_back(k == 1 ? where(primals[0], g, zero, stream())
                              : where(primals[0], zero, g, stream()));
    }
  }
  return result;
}

std::pair<std::vector<array>, std::vector<int>> Select::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  auto in = detail::align_batch(inputs, axes);
  return {{where(in[0], in[1], in[2], stream())}, {0}};
}

}  // namespace mlx::core
