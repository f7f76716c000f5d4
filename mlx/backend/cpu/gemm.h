// One row-major matrix product C = alpha op(A) op(B) + beta C with the threading policy of the
// matmul kernel (matmul.cpp), for kernels that build their own operands (convolution).
#pragma once

#include "mlx/types/half_types.h"

namespace mlx::core::cpu {

void matmul_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);
void matmul_gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* a,
                 int lda, const double* b, int ldb, double beta, double* c, int ldc);
// bfloat16 operands and a float32 C: bf16_gemm, so only where use_bf16_gemm() (gemm_bf16.h).
void matmul_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bfloat16_t* a,
                 int lda, const bfloat16_t* b, int ldb, float beta, float* c, int ldc);

}  // namespace mlx::core::cpu
