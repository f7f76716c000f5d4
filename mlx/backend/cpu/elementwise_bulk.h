// The vectorized float32 kernel (simd/vmath.h) of each unary and binary functor that has one:
// Unary's and Binary's kernels and the fused-region kernel use it for contiguous float32 runs
// (binary: each operand contiguous or one broadcast scalar), and through float32 chunks for
// float16 / bfloat16 runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/cpu/elementwise_functors.h"
#include "mlx/backend/cpu/simd/vmath.h"

namespace mlx::core::cpu {

using UnaryBulkFn = void (*)(const float*, float*, int64_t);
// A binary kernel takes (a, a_scalar, b, b_scalar, out, n).
using BinaryBulkFn = void (*)(const float*, bool, const float*, bool, float*, int64_t);

#define MLX_BULK(OP, FN, TYPE)                \
  if constexpr (std::is_same_v<Op, fn::OP>) { \
    return static_cast<TYPE>(simd::FN);       \
  } else

// The vectorized float32 kernel of an op, or nullptr (of type std::nullptr_t: comparing a
// function's address with nullptr is not a constant expression under the sanitizers).
template <typename Op>
constexpr auto bulk_kernel() {
#define BULK(OP, FN) MLX_BULK(OP, FN, UnaryBulkFn)
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
  BULK(GeluApprox, gelu_approx)
  BULK(Silu, silu)
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

// The same for binary functors.
template <typename Op>
constexpr auto binary_bulk_kernel() {
#define BULK(OP, FN) MLX_BULK(OP, FN, BinaryBulkFn)
  BULK(GeluVjp, gelu_vjp)
  BULK(GeluApproxVjp, gelu_approx_vjp)
  BULK(SiluVjp, silu_vjp) { return nullptr; }
#undef BULK
}
#undef MLX_BULK

// Whether Op has a bulk kernel.
template <typename Op>
inline constexpr bool has_bulk_kernel_v =
    !std::is_same_v<std::decay_t<decltype(bulk_kernel<Op>())>, std::nullptr_t>;
template <typename Op>
inline constexpr bool has_binary_bulk_kernel_v =
    !std::is_same_v<std::decay_t<decltype(binary_bulk_kernel<Op>())>, std::nullptr_t>;

// F over n 16-bit values: each chunk converted to float32, F's vectorized kernel, the result
// rounded back, which is what the functor does value by value (with std:: math, 5 to 17 times
// slower).
constexpr int64_t kBulkChunk = 512;
template <typename T, UnaryBulkFn F>
void bulk_16bit(const T* in, T* out, int64_t n) {
  float x[kBulkChunk], y[kBulkChunk];
  for (int64_t i = 0; i < n; i += kBulkChunk) {
    const int64_t m = std::min(kBulkChunk, n - i);
    convert_row(in + i, 1, x, 1, m);
    F(x, y, m);
    convert_row(y, 1, out + i, 1, m);
  }
}

// The binary form (a scalar operand is read as one element).
template <typename T, BinaryBulkFn F>
void bulk_16bit_binary(const T* a, bool a_scalar, const T* b, bool b_scalar, T* out, int64_t n) {
  float x[kBulkChunk], y[kBulkChunk], z[kBulkChunk];
  for (int64_t i = 0; i < n; i += kBulkChunk) {
    const int64_t m = std::min(kBulkChunk, n - i);
    convert_row(a_scalar ? a : a + i, 1, x, 1, a_scalar ? 1 : m);
    convert_row(b_scalar ? b : b + i, 1, y, 1, b_scalar ? 1 : m);
    F(x, a_scalar, y, b_scalar, z, m);
    convert_row(z, 1, out + i, 1, m);
  }
}

// The bulk kernel F (unary or binary) over elements of T: F itself for float, through float32
// chunks for the 16-bit floats.
template <typename T, auto F>
constexpr auto bulk_for() {
  if constexpr (std::is_same_v<T, float>) {
    return F;
  } else if constexpr (std::is_same_v<decltype(F), UnaryBulkFn>) {
    return &bulk_16bit<T, F>;
  } else {
    return &bulk_16bit_binary<T, F>;
  }
}

// Calls fn.template operator()<T>() with the element type T of `dt` when bulk kernels serve it
// (float32, float16, bfloat16); false for other dtypes.
template <typename Fn>
bool dispatch_bulk(Dtype dt, Fn&& fn) {
  if (dt == float32) {
    fn.template operator()<float>();
  } else if (dt == float16) {
    fn.template operator()<float16_t>();
  } else if (dt == bfloat16) {
    fn.template operator()<bfloat16_t>();
  } else {
    return false;
  }
  return true;
}

}  // namespace mlx::core::cpu
