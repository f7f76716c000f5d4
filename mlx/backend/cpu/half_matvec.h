// Products of a few float32 rows with a float16 / bfloat16 matrix read in place: the decode
// path of inference with 16-bit weights, which otherwise converts the whole weight matrix to
// float32 on every call. The same dot-product kernel serves float32 weights (faster than
// OpenBLAS's gemv for a few rows).
#pragma once

#include <cstdint>

#include "mlx/types/half_types.h"

namespace mlx::core::cpu {

// At most this many rows of A take the in-place path.
inline constexpr int64_t kHalfMatvecRows = 16;

// C (M x N, row-major, ldc) = alpha A B + beta C for A (M x K, float32, row-major, lda) and
// the 16-bit B (K x N) with element (k, n) at b[n * ldb + k] (trans_b) or b[k * ldb + n].
// Threads over the columns of C.
void half_matvec(int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda,
                 const float16_t* b, bool trans_b, int64_t ldb, float beta, float* c, int64_t ldc);
void half_matvec(int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda,
                 const bfloat16_t* b, bool trans_b, int64_t ldb, float beta, float* c, int64_t ldc);

// The float32 version for B stored transposed (each output a dot product of contiguous rows).
void small_rows_matvec(int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace mlx::core::cpu
