// The fused attention kernel (flash_attention.cu), for the inputs
// fast::attention_gpu_kernel_applies accepts; the others run the composite (attention.cpp).
#pragma once

#include "mlx/array.h"

namespace mlx::core::cu {

// out (B, N_q, T_q, D) = softmax(scale * q k^T [causal]) v for q (B, N_q, T_q, D) and k, v
// (B, N_kv, T_kv, D), N_q a multiple of N_kv.
void flash_attention(const array& queries, const array& keys, const array& values, array& out,
                     float scale, bool causal);

// The backward pass (flash_attention_backward.cu): dq, dk, dv of the inputs above given the
// forward's out and its cotangent d_out. Recomputes each row's log-sum-exp and the
// probabilities tile by tile, never the [T_q, T_kv] matrix.
void flash_attention_backward(const array& queries, const array& keys, const array& values,
                              const array& out, const array& d_out, array& dq, array& dk, array& dv,
                              float scale, bool causal);

// For the backward pass: each query row's log2-sum-exp2 of its scores times scale * log2(e),
// B * N_q * T_q floats at lse, -inf for rows that see no key. q, k and v dense, T_kv > 0.
void flash_attention_lse(const array& q, const array& k, const array& v, float* lse, float scale,
                         bool causal);

}  // namespace mlx::core::cu
