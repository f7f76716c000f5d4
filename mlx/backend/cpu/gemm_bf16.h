// bfloat16 matrix products on CPUs with AVX512-BF16 (vdpbf16ps: pairs of bfloat16 along K
// multiplied and added into float32 lanes), in own_gemm's BLIS structure (gemm_avx512.h):
// twice the float32 kernel's multiply rate, half its bytes, and no float32 copies of the
// operands. Accumulation is in float32; the caller rounds C to bfloat16 once.
#pragma once

#include <cstdint>

#include "mlx/backend/cpu/gemm_avx512.h"
#include "mlx/types/half_types.h"

#define MLX_TARGET_AVX512_BF16 \
  __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,fma")))

namespace mlx::core::cpu {

// Whether this CPU runs bf16_gemm (own_gemm's AVX-512 and AVX512-BF16).
bool bf16_gemm_supported();

// Whether a bfloat16 product (or convolution) goes to bf16_gemm: where supported, unless
// MLX_CPU_GEMM=blas asks for the float32 path (conversion, then the float32 GEMM).
bool use_bf16_gemm();

// Packs one panel of W lanes for the micro-kernels: ceil(kc / 2) steps of W 32-bit words, word
// v of step p holding elements k = 2p and 2p + 1 of lane v, element (v, k) read from
// src[v * s_v + k * s_k]; zeros for v >= n and k >= kc. Instantiated for W = kGemmNR (the
// packed B of bf16_gemm and of the bfloat16 implicit-GEMM convolution).
template <int W>
MLX_TARGET_AVX512 void pack_pairs(const uint16_t* src, int64_t s_v, int64_t s_k, int64_t n,
                                  int64_t kc, uint16_t* dst);

// C (M x N, float32, row-major, ldc) = alpha A B + beta C for bfloat16 A (M x K) with element
// (i, k) at a[i * a_sr + k * a_sc] and B (K x N) with element (k, j) at b[k * b_sr + j * b_sc]
// (any strides: transposed operands are read as they are). beta == 0 never reads C. Threads
// over the pool. Only call where bf16_gemm_supported().
void bf16_gemm(int64_t M, int64_t N, int64_t K, float alpha, const bfloat16_t* a, int64_t a_sr,
               int64_t a_sc, const bfloat16_t* b, int64_t b_sr, int64_t b_sc, float beta, float* c,
               int64_t ldc);

// C (M x N, float32, ldc) = alpha A W.T + beta C for few rows of bfloat16 A (M x K, row-major,
// lda; M <= kSkinnyMaxRows) and the bfloat16 W (N x K, row-major, ldw) read in place: dot
// products by vdpbf16ps, float32 accumulation (skinny_dots.h). Only call where
// bf16_gemm_supported().
void bf16_skinny_gemm(int64_t M, int64_t N, int64_t K, float alpha, const bfloat16_t* a,
                      int64_t lda, const bfloat16_t* w, int64_t ldw, float beta, float* c,
                      int64_t ldc);

}  // namespace mlx::core::cpu
