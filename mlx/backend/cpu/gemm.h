// One row-major matrix product C = alpha op(A) op(B) + beta C with the threading policy of the
// matmul kernel (matmul.cpp), for kernels that build their own operands (convolution).
#pragma once

namespace mlx::core::cpu {

void matmul_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);
void matmul_gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* a,
                 int lda, const double* b, int ldb, double beta, double* c, int ldc);

}  // namespace mlx::core::cpu
