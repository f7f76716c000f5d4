// Few rows of A times a transposed B (x @ W.T for a small batch of tokens): each output is a
// dot product of a row of A with a row of W = B.T, both contiguous, so nothing is packed (a
// packed B would cost a transpose of all of W for a few rows of reuse). A tile of kDotRowsA
// rows of A x kDotRowsW rows of W keeps kDotRowsA * kDotRowsW accumulators of 16 float32 lanes
// over K; the K loop goes in blocks whose rows of W stay in L1 while every tile of A's rows
// passes over them, so that W is read from memory once per call. The loop nest is shared by
// float32 (own_gemm, gemm_avx512.cpp) and bfloat16 (bf16_skinny_gemm, gemm_bf16.cpp), which
// differ in the tile's inner product only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "mlx/backend/cpu/gemm_avx512.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

inline constexpr int kDotRowsA = 6;
inline constexpr int kDotRowsW = 4;
// The most rows of A that skinny_dots takes (its accumulators live on the stack).
inline constexpr int64_t kSkinnyMaxRows = 96;

// C[:rows, :cols] = alpha * (the lane sums of acc) + beta * C.
MLX_TARGET_AVX512 inline void store_dots(const __m512* acc, int rows, int cols, float alpha,
                                         float beta, float* c, int64_t ldc) {
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < cols; ++j) {
      const float v = alpha * _mm512_reduce_add_ps(acc[r * kDotRowsW + j]);
      float* out = c + r * ldc + j;
      *out = beta == 0.0f ? v : v + beta * *out;
    }
  }
}

// C (M x N, ldc) = alpha A B + beta C for A (M x K, lda) and W = B.T (N x K, ldw), both
// row-major, M <= kSkinnyMaxRows, K in blocks of kc_max. Tile::run<R>(kc, a, lda, w, acc) adds
// R rows of A (lda apart) times the kDotRowsW rows w[j] over kc elements into
// acc[r * kDotRowsW + j]. Threads over groups of W's rows.
template <typename Tile, typename T>
void skinny_dots(int64_t kc_max, int64_t M, int64_t N, int64_t K, float alpha, const T* a,
                 int64_t lda, const T* w, int64_t ldw, float beta, float* c, int64_t ldc) {
  const int64_t tiles = (M + kDotRowsA - 1) / kDotRowsA, groups = (N + kDotRowsW - 1) / kDotRowsW;
  const int64_t grain = std::max<int64_t>(1, (1 << 18) / (kDotRowsW * std::max<int64_t>(K * M, 1)));
  parallel_for(groups, grain, [&](int64_t g0, int64_t g1) {
    alignas(64) __m512 acc[(kSkinnyMaxRows + kDotRowsA - 1) / kDotRowsA * kDotRowsA * kDotRowsW];
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t n = g * kDotRowsW;
      const int cols = static_cast<int>(std::min<int64_t>(kDotRowsW, N - n));
      std::memset(acc, 0, tiles * kDotRowsA * kDotRowsW * sizeof(__m512));
      for (int64_t k0 = 0; k0 < K; k0 += kc_max) {
        const int64_t kc = std::min(kc_max, K - k0);
        // W's rows past N repeat its last row (read, never stored).
        const T* wk[kDotRowsW];
        for (int j = 0; j < kDotRowsW; ++j) {
          wk[j] = w + std::min<int64_t>(n + j, N - 1) * ldw + k0;
        }
        for (int64_t t = 0; t < tiles; ++t) {
          const T* at = a + t * kDotRowsA * lda + k0;
          __m512* at_acc = acc + t * kDotRowsA * kDotRowsW;
          static_assert(kDotRowsA == 6, "the cases below cover 1 to 6 rows");
          switch (std::min<int64_t>(kDotRowsA, M - t * kDotRowsA)) {
            case 1:
              Tile::template run<1>(kc, at, lda, wk, at_acc);
              break;
            case 2:
              Tile::template run<2>(kc, at, lda, wk, at_acc);
              break;
            case 3:
              Tile::template run<3>(kc, at, lda, wk, at_acc);
              break;
            case 4:
              Tile::template run<4>(kc, at, lda, wk, at_acc);
              break;
            case 5:
              Tile::template run<5>(kc, at, lda, wk, at_acc);
              break;
            default:
              Tile::template run<6>(kc, at, lda, wk, at_acc);
          }
        }
      }
      for (int64_t t = 0; t < tiles; ++t) {
        const int rows = static_cast<int>(std::min<int64_t>(kDotRowsA, M - t * kDotRowsA));
        store_dots(acc + t * kDotRowsA * kDotRowsW, rows, cols, alpha, beta,
                   c + t * kDotRowsA * ldc + n, ldc);
      }
    }
  });
}

}  // namespace mlx::core::cpu
