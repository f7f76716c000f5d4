// Scalar definitions of the elementwise ops on the device, with the CPU's semantics
// (backend/cpu/elementwise_functors.h): NumPy rounding, Python remainder and floor division,
// NaN-propagating maximum/minimum, shifts past the bit width. Halves compute in float.
#pragma once

#include <cuda/std/cmath>
#include <cuda/std/complex>

#include "mlx/backend/cuda/device_types.cuh"

namespace mlx::core::cu::op {

template <typename T>
__device__ __forceinline__ compute_t<T> up(T x) {
  if constexpr (is_half_v<T>) {
    return static_cast<float>(x);
  } else {
    return x;
  }
}

template <typename T, typename C>
__device__ __forceinline__ T down(C x) {
  return cast_to<T>(x);
}

__device__ __forceinline__ float erfinv_f(float a) { return erfinvf(a); }
__device__ __forceinline__ double erfinv_f(double a) { return erfinv(a); }

// GELU's derivative Phi(x) + x phi(x), GELU's tanh approximation and its derivative, and
// SiLU's derivative (ops/elementwise.h).
template <typename T>
__device__ __forceinline__ T gelu_grad_f(T x) {
  return T(0.5) * (T(1) + ::erf(x * T(0.70710678118654752440))) +
         x * T(0.39894228040143267794) * ::exp(T(-0.5) * x * x);
}
template <typename T>
__device__ __forceinline__ T gelu_approx_f(T x) {
  const T t = ::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x));
  return T(0.5) * x * (T(1) + t);
}
template <typename T>
__device__ __forceinline__ T gelu_approx_grad_f(T x) {
  const T t = ::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x));
  const T du = T(0.79788456080286535588) * (T(1) + T(0.134145) * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}
template <typename T>
__device__ __forceinline__ T silu_grad_f(T x) {
  const T s = T(1) / (T(1) + ::exp(-x));
  return s * (T(1) + x * (T(1) - s));
}

// The complex square root of C99 (Annex G): exact zeros on the cut, whose sides follow the
// sign of the imaginary part's zero. cuda::std::sqrt goes through polar(), whose cos(pi / 2)
// leaves a tiny real part that flips later signs (acosh(-2 + 0i) came out as -pi).
__device__ inline complex_t c99_sqrt(complex_t z) {
  const float a = z.real(), b = z.imag();
  if (isinf(a) || isinf(b)) {
    return cuda::std::sqrt(z);  // handles the infinities as C99 does
  }
  const float t = sqrtf(0.5f * fabsf(a) + 0.5f * hypotf(a, b));
  if (t == 0.0f) {
    return complex_t(0.0f, b);
  }
  if (a >= 0.0f) {
    return complex_t(t, b / (2.0f * t));
  }
  return complex_t(fabsf(b) / (2.0f * t), copysignf(t, b));
}

template <typename T>
__device__ T sqrt_of(T x) {
  if constexpr (is_complex_v<T>) {
    return c99_sqrt(x);
  } else {
    return ::sqrt(x);
  }
}

// Float-domain functions; complex where cuda::std has them.
#define MLX_CU_FLOAT_FN(NAME, EXPR)       \
  struct NAME {                           \
    template <typename T>                 \
    __device__ T operator()(T x_) const { \
      auto x = up(x_);                    \
      using cuda::std::sqrt;              \
      using cuda::std::exp;               \
      using cuda::std::log;               \
      using cuda::std::sin;               \
      using cuda::std::cos;               \
      using cuda::std::tan;               \
      using cuda::std::sinh;              \
      using cuda::std::cosh;              \
      using cuda::std::tanh;              \
      return down<T>(EXPR);               \
    }                                     \
  };

MLX_CU_FLOAT_FN(Sqrt, sqrt_of(x))
MLX_CU_FLOAT_FN(Rsqrt, decltype(x)(1) / sqrt_of(x))
MLX_CU_FLOAT_FN(Exp, exp(x))
MLX_CU_FLOAT_FN(Expm1, ::expm1(x))
MLX_CU_FLOAT_FN(Log, log(x))
MLX_CU_FLOAT_FN(Log2, ::log2(x))
MLX_CU_FLOAT_FN(Log10, ::log10(x))
MLX_CU_FLOAT_FN(Log1p, ::log1p(x))
MLX_CU_FLOAT_FN(Sin, sin(x))
MLX_CU_FLOAT_FN(Cos, cos(x))
MLX_CU_FLOAT_FN(Tan, tan(x))
MLX_CU_FLOAT_FN(ArcSin, ::asin(x))
MLX_CU_FLOAT_FN(ArcCos, ::acos(x))
MLX_CU_FLOAT_FN(ArcTan, ::atan(x))
MLX_CU_FLOAT_FN(Sinh, sinh(x))
MLX_CU_FLOAT_FN(Cosh, cosh(x))
MLX_CU_FLOAT_FN(Tanh, tanh(x))
MLX_CU_FLOAT_FN(ArcSinh, ::asinh(x))
MLX_CU_FLOAT_FN(ArcCosh, acosh(x))
MLX_CU_FLOAT_FN(ArcTanh, ::atanh(x))
MLX_CU_FLOAT_FN(Erf, ::erf(x))
MLX_CU_FLOAT_FN(ErfInv, erfinv_f(x))
MLX_CU_FLOAT_FN(Sigmoid, x >= 0 ? decltype(x)(1) / (decltype(x)(1) + ::exp(-x))
                                : ::exp(x) / (decltype(x)(1) + ::exp(x)))
MLX_CU_FLOAT_FN(Gelu, decltype(x)(0.5) * x *
                          (decltype(x)(1) + ::erf(x * decltype(x)(0.70710678118654752440))))
MLX_CU_FLOAT_FN(GeluApprox, gelu_approx_f(x))
MLX_CU_FLOAT_FN(Silu, x / (decltype(x)(1) + ::exp(-x)))
MLX_CU_FLOAT_FN(FloatFloor, ::floor(x))
MLX_CU_FLOAT_FN(FloatCeil, ::ceil(x))
MLX_CU_FLOAT_FN(FloatTrunc, ::trunc(x))
#undef MLX_CU_FLOAT_FN

// Rounding is the identity on integers.
#define MLX_CU_ROUNDING(NAME)            \
  struct NAME {                          \
    template <typename T>                \
    __device__ T operator()(T x) const { \
      if constexpr (is_float_v<T>) {     \
        return Float##NAME{}(x);         \
      } else {                           \
        return x;                        \
      }                                  \
    }                                    \
  };
MLX_CU_ROUNDING(Floor)
MLX_CU_ROUNDING(Ceil)
MLX_CU_ROUNDING(Trunc)
#undef MLX_CU_ROUNDING

struct Round {  // half to even, as NumPy
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (is_float_v<T>) {
      return down<T>(::rint(up(x)));
    } else if constexpr (is_complex_v<T>) {
      return T(::rintf(x.real()), ::rintf(x.imag()));
    } else {
      return x;
    }
  }
};

struct Abs {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (cuda::std::is_unsigned_v<T> || cuda::std::is_same_v<T, bool>) {
      return x;
    } else if constexpr (is_complex_v<T>) {
      return T(cuda::std::abs(x), 0.0f);
    } else if constexpr (is_float_v<T>) {
      return down<T>(::fabs(up(x)));
    } else {
      return x < T(0) ? T(-x) : x;
    }
  }
};

struct Negative {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (cuda::std::is_same_v<T, bool>) {
      return !x;
    } else if constexpr (is_half_v<T>) {
      return down<T>(-up(x));
    } else {
      return T(-x);
    }
  }
};

struct Sign {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (is_complex_v<T>) {
      float r = cuda::std::abs(x);
      return r == 0 ? T(0) : x / r;
    } else if constexpr (cuda::std::is_unsigned_v<T> || cuda::std::is_same_v<T, bool>) {
      return x != 0;
    } else if constexpr (is_float_v<T>) {
      auto v = up(x);
      return ::isnan(v) ? x : down<T>((v > 0) - (v < 0));
    } else {
      return T((x > 0) - (x < 0));
    }
  }
};

struct Square {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (cuda::std::is_same_v<T, bool>) {
      return x;
    } else {
      auto v = up(x);
      return down<T>(v * v);
    }
  }
};

struct LogicalNot {
  template <typename T>
  __device__ bool operator()(T x) const {
    if constexpr (is_complex_v<T>) {
      return x.real() == 0 && x.imag() == 0;
    } else {
      return !static_cast<float>(up(x));
    }
  }
};

struct BitwiseInvert {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (cuda::std::is_same_v<T, bool>) {
      return !x;
    } else {
      return T(~x);
    }
  }
};

struct Conjugate {
  __device__ complex_t operator()(complex_t x) const { return cuda::std::conj(x); }
};
struct Real {
  __device__ float operator()(complex_t x) const { return x.real(); }
};
struct Imag {
  __device__ float operator()(complex_t x) const { return x.imag(); }
};

#define MLX_CU_PREDICATE(NAME, EXPR)          \
  struct NAME {                               \
    template <typename T>                     \
    __device__ bool operator()(T x_) const {  \
      if constexpr (is_float_v<T>) {          \
        auto x = up(x_);                      \
        return EXPR;                          \
      } else if constexpr (is_complex_v<T>) { \
        float x = x_.real();                  \
        bool a = EXPR;                        \
        x = x_.imag();                        \
        return a || (EXPR);                   \
      } else {                                \
        return false;                         \
      }                                       \
    }                                         \
  };
MLX_CU_PREDICATE(IsNaN, ::isnan(x))
MLX_CU_PREDICATE(IsInf, ::isinf(x))
MLX_CU_PREDICATE(IsPosInf, ::isinf(x) && x > 0)
MLX_CU_PREDICATE(IsNegInf, ::isinf(x) && x < 0)
#undef MLX_CU_PREDICATE

struct IsFinite {
  template <typename T>
  __device__ bool operator()(T x) const {
    if constexpr (is_float_v<T>) {
      return ::isfinite(up(x));
    } else if constexpr (is_complex_v<T>) {
      return ::isfinite(x.real()) && ::isfinite(x.imag());
    } else {
      return true;
    }
  }
};

// ---- binary ----

#define MLX_CU_ARITH(NAME, EXPR, BOOL_EXPR)          \
  struct NAME {                                      \
    template <typename T>                            \
    __device__ T operator()(T a_, T b_) const {      \
      if constexpr (cuda::std::is_same_v<T, bool>) { \
        bool a = a_, b = b_;                         \
        return BOOL_EXPR;                            \
      } else {                                       \
        auto a = up(a_);                             \
        auto b = up(b_);                             \
        return down<T>(EXPR);                        \
      }                                              \
    }                                                \
  };
MLX_CU_ARITH(Add, a + b, a || b)
MLX_CU_ARITH(Subtract, a - b, a != b)
MLX_CU_ARITH(Multiply, a* b, a&& b)
MLX_CU_ARITH(Divide, a / b, a&& b)
#undef MLX_CU_ARITH

struct Remainder {  // the result takes the divisor's sign
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (cuda::std::is_same_v<T, bool>) {
      return false;
    } else if constexpr (cuda::std::is_integral_v<T>) {
      if (b == 0) {
        return 0;
      }
      if constexpr (cuda::std::is_signed_v<T>) {
        if (b == -1) {
          return 0;
        }
      }
      T r = a % b;
      if constexpr (cuda::std::is_signed_v<T>) {
        if (r != 0 && ((r < 0) != (b < 0))) {
          r += b;
        }
      }
      return r;
    } else if constexpr (is_complex_v<T>) {
      return T(0);
    } else {
      auto x = up(a), y = up(b);
      auto r = ::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) {
        r += y;
      }
      return down<T>(r);
    }
  }
};

struct FloorDivide {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (cuda::std::is_same_v<T, bool>) {
      return a && b;
    } else if constexpr (cuda::std::is_integral_v<T>) {
      if (b == 0) {
        return 0;
      }
      if constexpr (cuda::std::is_signed_v<T>) {
        if (b == -1) {
          return T(0 - static_cast<cuda::std::make_unsigned_t<T>>(a));
        }
      }
      T q = a / b;
      if constexpr (cuda::std::is_signed_v<T>) {
        if ((a % b != 0) && ((a < 0) != (b < 0))) {
          --q;
        }
      }
      return q;
    } else if constexpr (is_complex_v<T>) {
      return T(0);
    } else {
      return down<T>(::floor(up(a) / up(b)));
    }
  }
};

struct Power {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (cuda::std::is_same_v<T, bool>) {
      return a || !b;
    } else if constexpr (cuda::std::is_integral_v<T>) {
      if constexpr (cuda::std::is_signed_v<T>) {
        if (b < 0) {
          return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
        }
      }
      T result = 1;
      while (b) {
        if (b & 1) {
          result *= a;
        }
        a *= a;
        b >>= 1;
      }
      return result;
    } else if constexpr (is_complex_v<T>) {
      return cuda::std::pow(a, b);
    } else {
      return down<T>(::pow(up(a), up(b)));
    }
  }
};

template <bool kMax>
struct Extremum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      if (::isnan(up(a))) {
        return a;
      }
      if (::isnan(up(b))) {
        return b;
      }
      return (kMax ? up(a) > up(b) : up(a) < up(b)) ? a : b;
    } else if constexpr (is_complex_v<T>) {  // lexicographic, as the CPU's operator<
      bool a_first = a.real() != b.real() ? a.real() > b.real() : a.imag() > b.imag();
      return (kMax ? a_first : !a_first) ? a : b;
    } else {
      return (kMax ? a > b : a < b) ? a : b;
    }
  }
};
using Maximum = Extremum<true>;
using Minimum = Extremum<false>;

template <typename T>
__device__ __forceinline__ bool less(T a, T b) {
  if constexpr (is_complex_v<T>) {
    return a.real() != b.real() ? a.real() < b.real() : a.imag() < b.imag();
  } else {
    return up(a) < up(b);
  }
}

struct Equal {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    if constexpr (is_complex_v<T>) {
      return a == b;
    } else {
      return up(a) == up(b);
    }
  }
};
struct NotEqual {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return !Equal{}(a, b);
  }
};
struct Less {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return less(a, b);
  }
};
struct Greater {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return less(b, a);
  }
};
struct LessEqual {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return less(a, b) || Equal{}(a, b);
  }
};
struct GreaterEqual {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return less(b, a) || Equal{}(a, b);
  }
};

struct NaNEqual {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      return up(a) == up(b) || (::isnan(up(a)) && ::isnan(up(b)));
    } else if constexpr (is_complex_v<T>) {
      auto same = [](float x, float y) { return x == y || (::isnan(x) && ::isnan(y)); };
      return same(a.real(), b.real()) && same(a.imag(), b.imag());
    } else {
      return a == b;
    }
  }
};

struct LogicalAnd {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return LogicalNot{}(a) == false && LogicalNot{}(b) == false;
  }
};
struct LogicalOr {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return !LogicalNot{}(a) || !LogicalNot{}(b);
  }
};

struct LogAddExp {
  template <typename T>
  __device__ T operator()(T a_, T b_) const {
    auto a = up(a_), b = up(b_);
    if (::isnan(a) || ::isnan(b)) {
      return down<T>(a + b);
    }
    auto m = a > b ? a : b;
    if (::isinf(m)) {
      return down<T>(m);
    }
    auto d = a > b ? b - a : a - b;
    return down<T>(m + ::log1p(::exp(d)));
  }
};

struct ArcTan2 {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return down<T>(::atan2(up(a), up(b)));
  }
};

// g f'(x) for an activation f (GeluVjp & co take (x, g)); halves compute in float and round
// once.
#define MLX_CU_ACTIVATION_VJP(NAME, GRAD)     \
  struct NAME {                               \
    template <typename T>                     \
    __device__ T operator()(T x, T g) const { \
      return down<T>(GRAD(up(x)) * up(g));    \
    }                                         \
  };
MLX_CU_ACTIVATION_VJP(GeluVjp, gelu_grad_f)
MLX_CU_ACTIVATION_VJP(GeluApproxVjp, gelu_approx_grad_f)
MLX_CU_ACTIVATION_VJP(SiluVjp, silu_grad_f)
#undef MLX_CU_ACTIVATION_VJP

#define MLX_CU_BITWISE(NAME, OP)              \
  struct NAME {                               \
    template <typename T>                     \
    __device__ T operator()(T a, T b) const { \
      return T(a OP b);                       \
    }                                         \
  };
MLX_CU_BITWISE(BitwiseAnd, &)
MLX_CU_BITWISE(BitwiseOr, |)
MLX_CU_BITWISE(BitwiseXor, ^)
#undef MLX_CU_BITWISE

struct LeftShift {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (cuda::std::is_same_v<T, bool>) {
      return a && !b;
    } else {
      using U = cuda::std::make_unsigned_t<T>;
      if (b < 0 || static_cast<uint64_t>(b) >= sizeof(T) * 8) {
        return 0;
      }
      return static_cast<T>(static_cast<U>(a) << b);
    }
  }
};
struct RightShift {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (cuda::std::is_same_v<T, bool>) {
      return a && !b;
    } else {
      if (b < 0 || static_cast<uint64_t>(b) >= sizeof(T) * 8) {
        return a < 0 ? T(-1) : T(0);
      }
      return static_cast<T>(a >> b);
    }
  }
};

}  // namespace mlx::core::cu::op
