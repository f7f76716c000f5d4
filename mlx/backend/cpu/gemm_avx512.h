// The project's own float32 matrix product for AVX-512 CPUs, in the BLIS / GotoBLAS structure
// (packed panels of A and B sized to the caches around a register-blocked micro-kernel). The
// system OpenBLAS ran its AVX2 kernels on the Zen 5 this was tuned on (OPENBLAS_CORETYPE=Haswell,
// see the machine notes), at half the AVX-512 rate. Callers ask use_own_gemm() first and otherwise
// call BLAS; CPUs without AVX-512 always get BLAS.
#pragma once

#include <immintrin.h>

#include <cstdint>
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

}  // namespace mlx::core::cpu
