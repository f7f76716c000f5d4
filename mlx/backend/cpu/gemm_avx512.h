// The project's own float32 matrix product for AVX-512 CPUs, in the BLIS / GotoBLAS structure
// (packed panels of A and B sized to the caches around a register-blocked micro-kernel). The
// system OpenBLAS ran its AVX2 kernels on the Zen 5 this was tuned on (OPENBLAS_CORETYPE=Haswell,
// see the machine notes), at half the AVX-512 rate. Callers ask use_own_gemm() first and otherwise
// call BLAS; CPUs without AVX-512 always get BLAS.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>

// The instruction sets own_gemm's kernels (and conv_avx512's) are compiled for, function by
// function: the rest of the library stays portable.
#define MLX_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

namespace mlx::core::cpu {

// The micro-kernel's register block, which the implicit-GEMM convolution shares: kGemmMR rows
// x 2 vectors of 16 columns = 24 accumulators of the 32 registers, leaving room for the two B
// vectors and the A broadcast (other tiles, e.g. 14x32, are not yet measured).
inline constexpr int kGemmMR = 12;
inline constexpr int kGemmNR = 32;
// Most rows of A a blocked product packs at once (own_gemm's and bf16_gemm's mc).
inline constexpr int64_t kGemmMC = 32 * kGemmMR;

inline constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How a blocked product on `threads` threads splits C: `count` row blocks of `rows` rows (a
// multiple of kGemmMR, at most kGemmMC), a multiple of the thread count when there are enough
// rows, and beyond parallel_for's chunk count a multiple of that, so that every chunk holds as
// many blocks (11 blocks of 4096 rows made 8 chunks of 1 or 2: 4096 x 384 x 128 at 188
// GFLOP/s, 213 as 16 blocks); else one block per thread (at least one row panel each), the
// spare threads splitting each block's column panels into `column_parts`.
struct RowBlocks {
  int64_t rows;
  int64_t count;
  int64_t column_parts(int64_t panels, int64_t threads) const {
    return count >= threads ? 1 : std::min(panels, ceil_div(threads, count));
  }
};
RowBlocks split_rows(int64_t M, int64_t threads);

// Whether C = alpha op(A) op(B) + beta C of this size goes to own_gemm: MLX_CPU_GEMM=own forces
// it (where the CPU has AVX-512), MLX_CPU_GEMM=blas forbids it, otherwise the measured policy
// in gemm_avx512.cpp decides, by shape and by whether OpenBLAS runs AVX-512 kernels itself
// (trans_a: A's element (m, k) at a[k * lda + m]; trans_b: B's element (k, n) at
// b[n * ldb + k]).
bool use_own_gemm(int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b);

// MLX_CPU_GEMM=own (true) or =blas (false), read at each call; nothing when unset.
std::optional<bool> forced_own_gemm();

// Whether this CPU runs own_gemm at all (AVX-512 F/DQ/BW/VL).
bool own_gemm_supported();

// Row-major C (M x N, ldc) = alpha op(A) op(B) + beta C, with op(A) (M x K) element (i, k) at
// a[i * lda + k], or at a[k * lda + i] when trans_a (likewise B, K x N). beta == 0 never reads
// C. Threads over the project's pool. Only call where own_gemm_supported().
void own_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc);

// Whether M x N x K is a small C over a long K (weight gradients dy.T @ x), which
// split_k_product threads better than splitting C's rows and columns.
bool splits_k(int64_t M, int64_t N, int64_t K);

// product(k0, k1, beta, c, ldc): C (M x N at c, ldc) = alpha op(A)[:, k0:k1] op(B)[k0:k1] +
// beta C on the calling thread alone.
using SliceProduct = std::function<void(int64_t, int64_t, float, float*, int64_t)>;

// C = the product over K on `threads` threads, each its own range of K (cut at multiples of
// `step`) on its own (no barrier per K block, no thread idle while one packs B): the first
// writes C with beta, the others partial sums that are added in afterwards.
void split_k_product(int64_t threads, int64_t M, int64_t N, int64_t K, int64_t step, float beta,
                     float* c, int64_t ldc, const SliceProduct& product);

// C[:mr, :nr] = alpha * (c0 | c1) + beta * C, row r of the tile in c0[r] (columns 0-15) and
// c1[r] (16-31); C is unread when beta is 0.
MLX_TARGET_AVX512 inline void store_tile(const __m512* c0, const __m512* c1, float* c, int64_t ldc,
                                         int mr, int nr, float alpha, float beta) {
  const __mmask16 m0 = nr >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << nr) - 1);
  const __mmask16 m1 =
      nr >= 32 ? 0xFFFF : (nr > 16 ? static_cast<__mmask16>((1u << (nr - 16)) - 1) : 0);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
  for (int r = 0; r < kGemmMR; ++r) {
    if (r < mr) {
      float* row = c + r * ldc;
      __m512 x0 = _mm512_mul_ps(va, c0[r]), x1 = _mm512_mul_ps(va, c1[r]);
      if (beta != 0.0f) {
        x0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, row), x0);
        x1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16), x1);
      }
      _mm512_mask_storeu_ps(row, m0, x0);
      _mm512_mask_storeu_ps(row + 16, m1, x1);
    }
  }
}

// Transposes the 16 x 16 block whose row i is r[i] in registers: afterwards r[j] holds column
// j (four rounds of shuffles: pairs of rows, quads, then 128-bit lanes twice). Any 32-bit
// values: the packing of bfloat16 pairs moves words with it.
MLX_TARGET_AVX512 inline void transpose16(__m512* r) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // r[4i + j], lane L: rows 4i .. 4i + 3 of column 4L + j.
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 x0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    const __m512 x1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
    const __m512 y0 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    const __m512 y1 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    r[j] = _mm512_shuffle_f32x4(x0, y0, 0x88);
    r[4 + j] = _mm512_shuffle_f32x4(x1, y1, 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(x0, y0, 0xDD);
    r[12 + j] = _mm512_shuffle_f32x4(x1, y1, 0xDD);
  }
}

}  // namespace mlx::core::cpu
