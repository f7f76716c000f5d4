// Bulk float32 elementwise math over contiguous arrays, built on vec.h.
//
// Each kernel computes out[i] = f(in[i]) for 0 <= i < n (the binary ones
// out[i] = f(a[i], b[i]), an operand flagged scalar read at [0] for every i),
// eight lanes at a time (sixteen on CPUs with AVX-512: vmath_avx512.cpp) with a
// masked tail, on the calling thread (callers split work across threads). An input
// and out may be the same array but must not otherwise overlap.
// Calls with n >= 2^21 write through non-temporal (cache-bypassing) stores.
// Accuracy and special values are documented in vec.h; results are identical
// to applying the vec.h function to each element.

#pragma once

#include <cstdint>

namespace mlx::core::simd {

void exp(const float* in, float* out, int64_t n);
void expm1(const float* in, float* out, int64_t n);
void log(const float* in, float* out, int64_t n);
void log1p(const float* in, float* out, int64_t n);
void log2(const float* in, float* out, int64_t n);
void log10(const float* in, float* out, int64_t n);
void sin(const float* in, float* out, int64_t n);
void cos(const float* in, float* out, int64_t n);
void tan(const float* in, float* out, int64_t n);
void tanh(const float* in, float* out, int64_t n);
void sigmoid(const float* in, float* out, int64_t n);
void erf(const float* in, float* out, int64_t n);
void erfinv(const float* in, float* out, int64_t n);
void gelu(const float* in, float* out, int64_t n);
void gelu_approx(const float* in, float* out, int64_t n);
void silu(const float* in, float* out, int64_t n);
void sinh(const float* in, float* out, int64_t n);
void cosh(const float* in, float* out, int64_t n);
void atan(const float* in, float* out, int64_t n);
void asin(const float* in, float* out, int64_t n);
void acos(const float* in, float* out, int64_t n);
void asinh(const float* in, float* out, int64_t n);
void acosh(const float* in, float* out, int64_t n);
void atanh(const float* in, float* out, int64_t n);
void sqrt(const float* in, float* out, int64_t n);
void rsqrt(const float* in, float* out, int64_t n);

// g f'(x) for the activations above (a = x, b = g).
void gelu_vjp(const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, int64_t n);
void gelu_approx_vjp(const float* a, bool a_scalar, const float* b, bool b_scalar, float* out,
                     int64_t n);
void silu_vjp(const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, int64_t n);

}  // namespace mlx::core::simd
