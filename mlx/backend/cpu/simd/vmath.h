// Bulk float32 elementwise math over contiguous arrays, built on vec.h.
//
// Each kernel computes out[i] = f(in[i]) for 0 <= i < n, eight lanes at a time
// with a masked tail, on the calling thread (callers split work across
// threads). in and out may be the same array but must not otherwise overlap.
// Accuracy and special values are documented in vec.h.

#pragma once

#include <cstdint>

namespace mlx::core::simd {

#define MLX_SIMD_UNARY_KERNEL(name) void name(const float* in, float* out, int64_t n);

MLX_SIMD_UNARY_KERNEL(exp)
MLX_SIMD_UNARY_KERNEL(expm1)
MLX_SIMD_UNARY_KERNEL(log)
MLX_SIMD_UNARY_KERNEL(log1p)
MLX_SIMD_UNARY_KERNEL(log2)
MLX_SIMD_UNARY_KERNEL(log10)
MLX_SIMD_UNARY_KERNEL(sin)
MLX_SIMD_UNARY_KERNEL(cos)
MLX_SIMD_UNARY_KERNEL(tan)
MLX_SIMD_UNARY_KERNEL(tanh)
MLX_SIMD_UNARY_KERNEL(sigmoid)
MLX_SIMD_UNARY_KERNEL(erf)
MLX_SIMD_UNARY_KERNEL(erfinv)
MLX_SIMD_UNARY_KERNEL(sinh)
MLX_SIMD_UNARY_KERNEL(cosh)
MLX_SIMD_UNARY_KERNEL(atan)
MLX_SIMD_UNARY_KERNEL(asin)
MLX_SIMD_UNARY_KERNEL(acos)
MLX_SIMD_UNARY_KERNEL(asinh)
MLX_SIMD_UNARY_KERNEL(acosh)
MLX_SIMD_UNARY_KERNEL(atanh)
MLX_SIMD_UNARY_KERNEL(sqrt)
MLX_SIMD_UNARY_KERNEL(rsqrt)

#undef MLX_SIMD_UNARY_KERNEL

}  // namespace mlx::core::simd
