// The vectorized float32 kernel (simd/vmath.h) of each unary functor that has one: Unary's
// kernel and the fused-region kernel use it for contiguous float32 runs, and through float32
// chunks for float16 / bfloat16 runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/cpu/elementwise_functors.h"
#include "mlx/backend/cpu/simd/vmath.h"

namespace mlx::core::cpu {

// The vectorized float32 kernel of an op, or nullptr (of type std::nullptr_t: comparing a
// function's address with nullptr is not a constant expression under the sanitizers).
template <typename Op>
constexpr auto bulk_kernel() {
#define BULK(OP, FN)                          \
  if constexpr (std::is_same_v<Op, fn::OP>) { \
    return simd::FN;                          \
  } else
  BULK(Exp, exp)
  BULK(Expm1, expm1)
  BULK(Log, log)
  BULK(Log1p, log1p)
  BULK(Log2, log2)
  BULK(Log10, log10)
  BULK(Sin, sin)
  BULK(Cos, cos)
  BULK(Tan, tan)
  BULK(Tanh, tanh)
  BULK(Sigmoid, sigmoid)
  BULK(Erf, erf)
  BULK(ErfInv, erfinv)
  BULK(Gelu, gelu)
  BULK(GeluGrad, gelu_grad)
  BULK(GeluApprox, gelu_approx)
  BULK(GeluApproxGrad, gelu_approx_grad)
  BULK(Silu, silu)
  BULK(SiluGrad, silu_grad)
  BULK(Sinh, sinh)
  BULK(Cosh, cosh)
  BULK(ArcTan, atan)
  BULK(ArcSin, asin)
  BULK(ArcCos, acos)
  BULK(ArcSinh, asinh)
  BULK(ArcCosh, acosh)
  BULK(ArcTanh, atanh)
  BULK(Sqrt, sqrt)
  BULK(Rsqrt, rsqrt) { return nullptr; }
#undef BULK
}

// Whether Op has a bulk kernel.
template <typename Op>
inline constexpr bool has_bulk_kernel_v =
    !std::is_same_v<std::decay_t<decltype(bulk_kernel<Op>())>, std::nullptr_t>;

// F over n 16-bit values: each chunk converted to float32, F's vectorized kernel, the result
// rounded back, which is what the functor does value by value (with std:: math, 5 to 17 times
// slower).
template <typename T, void (*F)(const float*, float*, int64_t)>
void bulk_16bit(const T* in, T* out, int64_t n) {
  constexpr int64_t kChunk = 512;
  float x[kChunk], y[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    convert_row(in + i, 1, x, 1, m);
    F(x, y, m);
    convert_row(y, 1, out + i, 1, m);
  }
}

}  // namespace mlx::core::cpu
