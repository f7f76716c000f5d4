// The project's own float32 matrix product for AVX-512 CPUs, in the BLIS / GotoBLAS structure
// (packed panels of A and B sized to the caches around a register-blocked micro-kernel). The
// system OpenBLAS ran its AVX2 kernels on the Zen 5 this was tuned on (OPENBLAS_CORETYPE=Haswell,
// see the machine notes), at half the AVX-512 rate. Callers ask use_own_gemm() first and otherwise
// call BLAS; CPUs without AVX-512 always get BLAS.
#pragma once

#include <cstdint>

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

// Whether this CPU runs own_gemm at all (AVX-512 F/DQ/BW/VL).
bool own_gemm_supported();

// Row-major C (M x N, ldc) = alpha op(A) op(B) + beta C, with op(A) (M x K) element (i, k) at
// a[i * lda + k], or at a[k * lda + i] when trans_a (likewise B, K x N). beta == 0 never reads
// C. Threads over the project's pool. Only call where own_gemm_supported().
void own_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc);

}  // namespace mlx::core::cpu
