// Scalar definitions of the elementwise ops. Half types compute in float.
#pragma once

#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "mlx/dtype.h"

namespace mlx::core::cpu::fn {

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
template <typename T>
inline constexpr bool is_complex_v = std::is_same_v<T, complex64_t>;
template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// Integer arithmetic wraps as NumPy's does: in an unsigned type at least as wide as unsigned
// int (signed overflow, and unsigned 16-bit products promoted to int, are undefined in C++).
template <typename T>
using wrap_t =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <typename T>
inline constexpr bool wraps_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Applies a float-domain function to any floating type (halves go through float).
#define MLX_FLOAT_FN(NAME, EXPR)          \
  struct NAME {                           \
    template <typename T>                 \
    T operator()(T x_) const {            \
      if constexpr (is_half_v<T>) {       \
        float x = static_cast<float>(x_); \
        return T(EXPR);                   \
      } else {                            \
        auto x = x_;                      \
        return static_cast<T>(EXPR);      \
      }                                   \
    }                                     \
  };

inline float erfinv_impl(float a) {
  // Giles' single-precision approximation refined by two Newton steps.
  if (std::isnan(a) || a < -1.0f || a > 1.0f)
    return std::numeric_limits<float>::quiet_NaN();
  if (a == 1.0f)
    return std::numeric_limits<float>::infinity();
  if (a == -1.0f)
    return -std::numeric_limits<float>::infinity();
  double x = a;
  double w = -std::log((1.0 - x) * (1.0 + x));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * x;
  for (int i = 0; i < 2; ++i) {  // Newton on erf(y) - x
    double err = std::erf(y) - x;
    y -= err / (1.1283791670955126 * std::exp(-y * y));
  }
  return static_cast<float>(y);
}

inline double erfinv_impl(double a) {
  if (std::isnan(a) || a < -1.0 || a > 1.0)
    return std::numeric_limits<double>::quiet_NaN();
  if (a == 1.0 || a == -1.0)
    return a * std::numeric_limits<double>::infinity();
  double y = erfinv_impl(static_cast<float>(a));
  for (int i = 0; i < 3; ++i) {
    double err = std::erf(y) - a;
    y -= err / (1.1283791670955126 * std::exp(-y * y));
  }
  return y;
}

// x Phi(x) and its derivative Phi(x) + x phi(x), Phi and phi the standard normal CDF and
// density.
template <typename T>
inline T gelu_impl(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
}
template <typename T>
inline T gelu_grad_impl(T x) {
  return T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440))) +
         x * T(0.39894228040143267794) * std::exp(T(-0.5) * x * x);
}

// GELU's tanh approximation and its derivative (see gelu_approx in ops/elementwise.h).
template <typename T>
inline T gelu_approx_impl(T x) {
  const T t = std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x));
  return T(0.5) * x * (T(1) + t);
}
template <typename T>
inline T gelu_approx_grad_impl(T x) {
  const T t = std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x));
  const T du = T(0.79788456080286535588) * (T(1) + T(0.134145) * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}

template <typename T>
inline T sigmoid_impl(T x) {
  // Stable for large |x|: never computes exp of a large positive number.
  if (x >= 0) {
    return T(1) / (T(1) + std::exp(-x));
  }
  T e = std::exp(x);
  return e / (T(1) + e);
}

// SiLU's derivative sigma(x) (1 + x (1 - sigma(x))), sigma computed once.
template <typename T>
inline T silu_grad_impl(T x) {
  const T s = sigmoid_impl(x);
  return s * (T(1) + x * (T(1) - s));
}

MLX_FLOAT_FN(Sqrt, std::sqrt(x))
MLX_FLOAT_FN(Rsqrt, decltype(x)(1) / std::sqrt(x))
MLX_FLOAT_FN(Exp, std::exp(x))
MLX_FLOAT_FN(Expm1, std::expm1(x))
MLX_FLOAT_FN(Log, std::log(x))
MLX_FLOAT_FN(Log2, std::log2(x))
MLX_FLOAT_FN(Log10, std::log10(x))
MLX_FLOAT_FN(Log1p, std::log1p(x))
MLX_FLOAT_FN(Sin, std::sin(x))
MLX_FLOAT_FN(Cos, std::cos(x))
MLX_FLOAT_FN(Tan, std::tan(x))
MLX_FLOAT_FN(ArcSin, std::asin(x))
MLX_FLOAT_FN(ArcCos, std::acos(x))
MLX_FLOAT_FN(ArcTan, std::atan(x))
MLX_FLOAT_FN(Sinh, std::sinh(x))
MLX_FLOAT_FN(Cosh, std::cosh(x))
MLX_FLOAT_FN(Tanh, std::tanh(x))
MLX_FLOAT_FN(ArcSinh, std::asinh(x))
MLX_FLOAT_FN(ArcCosh, std::acosh(x))
MLX_FLOAT_FN(ArcTanh, std::atanh(x))
MLX_FLOAT_FN(Sigmoid, sigmoid_impl(x))
MLX_FLOAT_FN(Gelu, gelu_impl(x))
MLX_FLOAT_FN(GeluApprox, gelu_approx_impl(x))
MLX_FLOAT_FN(Silu, sigmoid_impl(x) * x)
#undef MLX_FLOAT_FN

struct Erf {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, double>) {
      return std::erf(x);
    } else {
      return T(std::erf(static_cast<float>(x)));
    }
  }
};

struct ErfInv {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, double>) {
      return erfinv_impl(x);
    } else {
      return T(erfinv_impl(static_cast<float>(x)));
    }
  }
};

struct Abs {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else if constexpr (is_complex_v<T>) {
      return T(std::abs(static_cast<std::complex<float>>(x)));
    } else if constexpr (is_half_v<T>) {
      return T::from_bits(x.bits_ & 0x7fff);
    } else if constexpr (wraps_v<T>) {
      return x < T(0) ? T(wrap_t<T>(0) - wrap_t<T>(x)) : x;  // abs(INT_MIN) wraps to INT_MIN
    } else {
      return x < T(0) ? T(-x) : x;
    }
  }
};

struct Negative {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) {
      return !x;
    } else if constexpr (wraps_v<T>) {
      return T(wrap_t<T>(0) - wrap_t<T>(x));
    } else {
      return T(-x);
    }
  }
};

struct Sign {
  template <typename T>
  T operator()(T x) const {
    if constexpr (is_complex_v<T>) {
      float r = std::abs(static_cast<std::complex<float>>(x));
      return r == 0 ? T(0) : T(x / r);
    } else if constexpr (std::is_unsigned_v<T>) {
      return x != 0;
    } else if constexpr (is_float_v<T>) {
      float v = static_cast<float>(x);
      return std::isnan(v) ? x : T((v > 0) - (v < 0));
    } else {
      return T((x > 0) - (x < 0));
    }
  }
};

struct Square {
  template <typename T>
  T operator()(T x) const {
    if constexpr (wraps_v<T>) {
      return T(wrap_t<T>(x) * wrap_t<T>(x));
    } else {
      return T(x * x);
    }
  }
};

// Rounding of real floats; integers are already whole.
#define MLX_ROUNDING_FN(NAME, FN)                                                 \
  struct NAME {                                                                   \
    template <typename T>                                                         \
    T operator()(T x) const {                                                     \
      if constexpr (is_float_v<T>) {                                              \
        return T(FN(static_cast<std::conditional_t<is_half_v<T>, float, T>>(x))); \
      } else {                                                                    \
        return x;                                                                 \
      }                                                                           \
    }                                                                             \
  };
MLX_ROUNDING_FN(Floor, std::floor)
MLX_ROUNDING_FN(Ceil, std::ceil)
MLX_ROUNDING_FN(Trunc, std::trunc)
#undef MLX_ROUNDING_FN

// Round half to even, as NumPy.
struct Round {
  template <typename T>
  T operator()(T x) const {
    if constexpr (is_float_v<T>) {
      return T(std::nearbyint(static_cast<std::conditional_t<is_half_v<T>, float, T>>(x)));
    } else if constexpr (is_complex_v<T>) {
      return T(std::nearbyint(x.real()), std::nearbyint(x.imag()));
    } else {
      return x;
    }
  }
};

struct LogicalNot {
  template <typename T>
  bool operator()(T x) const {
    if constexpr (is_complex_v<T>) {
      return x.real() == 0 && x.imag() == 0;
    } else {
      return !static_cast<float>(x);
    }
  }
};

struct BitwiseInvert {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) {
      return !x;
    } else {
      return T(~x);
    }
  }
};

struct Conjugate {
  complex64_t operator()(complex64_t x) const {
    return std::conj(static_cast<std::complex<float>>(x));
  }
};
struct Real {
  float operator()(complex64_t x) const { return x.real(); }
};
struct Imag {
  float operator()(complex64_t x) const { return x.imag(); }
};

#define MLX_FLOAT_PREDICATE(NAME, EXPR)                                       \
  struct NAME {                                                               \
    template <typename T>                                                     \
    bool operator()(T x_) const {                                             \
      if constexpr (is_float_v<T>) {                                          \
        auto x = static_cast<std::conditional_t<is_half_v<T>, float, T>>(x_); \
        return EXPR;                                                          \
      } else if constexpr (is_complex_v<T>) {                                 \
        auto r = x_.real(), i = x_.imag();                                    \
        auto x = r;                                                           \
        bool a = EXPR;                                                        \
        x = i;                                                                \
        return a || (EXPR);                                                   \
      } else {                                                                \
        return false;                                                         \
      }                                                                       \
    }                                                                         \
  };
MLX_FLOAT_PREDICATE(IsNaN, std::isnan(x))
MLX_FLOAT_PREDICATE(IsInf, std::isinf(x))
MLX_FLOAT_PREDICATE(IsPosInf, std::isinf(x) && x > 0)
MLX_FLOAT_PREDICATE(IsNegInf, std::isinf(x) && x < 0)
#undef MLX_FLOAT_PREDICATE

struct IsFinite {
  template <typename T>
  bool operator()(T x) const {
    if constexpr (is_float_v<T>) {
      return std::isfinite(static_cast<std::conditional_t<is_half_v<T>, float, T>>(x));
    } else if constexpr (is_complex_v<T>) {
      return std::isfinite(x.real()) && std::isfinite(x.imag());
    } else {
      return true;
    }
  }
};

// ---- binary ----

struct Add {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a || b;
    else if constexpr (wraps_v<T>)
      return T(wrap_t<T>(a) + wrap_t<T>(b));
    else
      return T(a + b);
  }
};
struct Subtract {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (wraps_v<T>) {
      return T(wrap_t<T>(a) - wrap_t<T>(b));
    } else {
      return T(a - b);
    }
  }
};
struct Multiply {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else if constexpr (wraps_v<T>)
      return T(wrap_t<T>(a) * wrap_t<T>(b));
    else
      return T(a * b);
  }
};
struct Divide {
  template <typename T>
  T operator()(T a, T b) const {
    return T(a / b);
  }
};

// Result takes the sign of the divisor (Python / NumPy semantics).
struct Remainder {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return false;
    } else if constexpr (std::is_integral_v<T>) {
      if (b == 0)
        return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1)
          return 0;  // INT_MIN % -1 traps
      }
      T r = a % b;
      if constexpr (std::is_signed_v<T>) {
        if (r != 0 && ((r < 0) != (b < 0)))
          r += b;
      }
      return r;
    } else if constexpr (is_complex_v<T>) {
      return T(0);
    } else {
      using C = std::conditional_t<is_half_v<T>, float, T>;
      C x = static_cast<C>(a), y = static_cast<C>(b);
      C r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0)))
        r += y;
      return T(r);
    }
  }
};

struct FloorDivide {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a && b;
    } else if constexpr (std::is_integral_v<T>) {
      if (b == 0)
        return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1)
          return T(0 - static_cast<std::make_unsigned_t<T>>(a));  // INT_MIN / -1 traps
      }
      T q = a / b;
      if constexpr (std::is_signed_v<T>) {
        if ((a % b != 0) && ((a < 0) != (b < 0)))
          --q;
      }
      return q;
    } else {
      using C = std::conditional_t<is_half_v<T>, float, T>;
      return T(std::floor(static_cast<C>(a) / static_cast<C>(b)));
    }
  }
};

struct Power {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      // Exponentiation by squaring; negative exponents give 0 (except base +-1).
      if constexpr (std::is_signed_v<T>) {
        if (b < 0)
          return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
      }
      T result = 1;
      while (b) {
        if (b & 1)
          result *= a;
        a *= a;
        b >>= 1;
      }
      return result;
    } else if constexpr (is_complex_v<T>) {
      return T(std::pow(static_cast<std::complex<float>>(a), static_cast<std::complex<float>>(b)));
    } else {
      using C = std::conditional_t<is_half_v<T>, float, T>;
      return T(std::pow(static_cast<C>(a), static_cast<C>(b)));
    }
  }
};

// x ** k for a broadcast scalar exponent k that is a small integer: repeated products instead
// of std::pow per element (about 10x faster). Power's kernels, fused or not, use it when
// small_integer_exponent accepts the exponent.
inline bool small_integer_exponent(double k, int& n) {
  if (k != static_cast<int>(k) || k < -4 || k > 4) {
    return false;
  }
  n = static_cast<int>(k);
  return true;
}
struct PowerByInteger {
  int n;
  template <typename T>
  T operator()(T x) const {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    C base = static_cast<C>(x);
    C p = 1;
    for (int i = 0; i < (n < 0 ? -n : n); ++i) {
      p *= base;
    }
    return T(n < 0 ? C(1) / p : p);
  }
};

// NaN propagates, as in NumPy's maximum/minimum.
struct Maximum {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      if (std::isnan(static_cast<float>(a)))
        return a;
      if (std::isnan(static_cast<float>(b)))
        return b;
    }
    return a > b ? a : b;
  }
};
struct Minimum {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      if (std::isnan(static_cast<float>(a)))
        return a;
      if (std::isnan(static_cast<float>(b)))
        return b;
    }
    return a < b ? a : b;
  }
};

#define MLX_COMPARE(NAME, OP)         \
  struct NAME {                       \
    template <typename T>             \
    bool operator()(T a, T b) const { \
      return a OP b;                  \
    }                                 \
  };
MLX_COMPARE(Equal, ==)
MLX_COMPARE(NotEqual, !=)
MLX_COMPARE(Less, <)
MLX_COMPARE(LessEqual, <=)
MLX_COMPARE(Greater, >)
MLX_COMPARE(GreaterEqual, >=)
#undef MLX_COMPARE

struct NaNEqual {
  template <typename T>
  bool operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      return a == b || (std::isnan(static_cast<float>(a)) && std::isnan(static_cast<float>(b)));
    } else if constexpr (is_complex_v<T>) {
      auto both_nan = [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); };
      return both_nan(a.real(), b.real()) && both_nan(a.imag(), b.imag());
    } else {
      return a == b;
    }
  }
};

struct LogicalAnd {
  template <typename T>
  bool operator()(T a, T b) const {
    return static_cast<bool>(a) && static_cast<bool>(b);
  }
};
struct LogicalOr {
  template <typename T>
  bool operator()(T a, T b) const {
    return static_cast<bool>(a) || static_cast<bool>(b);
  }
};

struct LogAddExp {
  template <typename T>
  T operator()(T a_, T b_) const {
    using C = std::conditional_t<is_half_v<T>, float, T>;
    C a = static_cast<C>(a_), b = static_cast<C>(b_);
    if (std::isnan(a) || std::isnan(b))
      return T(a + b);
    C m = a > b ? a : b;
    if (std::isinf(m))
      return T(m);  // avoids inf - inf
    C d = a > b ? b - a : a - b;
    return T(m + std::log1p(std::exp(d)));
  }
};

struct ArcTan2 {
  template <typename T>
  T operator()(T a, T b) const {
    using C = std::conditional_t<is_half_v<T>, float, T>;
    return T(std::atan2(static_cast<C>(a), static_cast<C>(b)));
  }
};

// g f'(x) for an activation f (the binary ops GeluVjp & co take (x, g)); halves compute in
// float and round once.
#define MLX_ACTIVATION_VJP(NAME, GRAD)                       \
  struct NAME {                                              \
    template <typename T>                                    \
    T operator()(T x, T g) const {                           \
      using C = std::conditional_t<is_half_v<T>, float, T>;  \
      return T(GRAD(static_cast<C>(x)) * static_cast<C>(g)); \
    }                                                        \
  };
MLX_ACTIVATION_VJP(GeluVjp, gelu_grad_impl)
MLX_ACTIVATION_VJP(GeluApproxVjp, gelu_approx_grad_impl)
MLX_ACTIVATION_VJP(SiluVjp, silu_grad_impl)
#undef MLX_ACTIVATION_VJP

#define MLX_BITWISE(NAME, OP)      \
  struct NAME {                    \
    template <typename T>          \
    T operator()(T a, T b) const { \
      return T(a OP b);            \
    }                              \
  };
MLX_BITWISE(BitwiseAnd, &)
MLX_BITWISE(BitwiseOr, |)
MLX_BITWISE(BitwiseXor, ^)
#undef MLX_BITWISE

// Shifts by >= the bit width give 0 (or -1 for negative right shifts) instead of UB.
struct LeftShift {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a && !b;
    } else {
      using U = std::make_unsigned_t<T>;
      if (b < 0 || static_cast<uint64_t>(b) >= sizeof(T) * 8)
        return 0;
      return static_cast<T>(static_cast<U>(a) << b);
    }
  }
};
struct RightShift {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a && !b;
    } else {
      if (b < 0 || static_cast<uint64_t>(b) >= sizeof(T) * 8)
        return a < 0 ? T(-1) : T(0);
      return static_cast<T>(a >> b);
    }
  }
};

}  // namespace mlx::core::cpu::fn
