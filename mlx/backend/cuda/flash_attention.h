// The fused attention kernel (flash_attention.cu), for the inputs
// fast::attention_gpu_kernel_applies accepts; the others run the composite (attention.cpp).
#pragma once

#include "mlx/array.h"

namespace mlx::core::cu {

// out (B, N_q, T_q, D) = softmax(scale * q k^T [causal]) v for q (B, N_q, T_q, D) and k, v
// (B, N_kv, T_kv, D), N_q a multiple of N_kv.
void flash_attention(const array& queries, const array& keys, const array& values, array& out,
                     float scale, bool causal);

}  // namespace mlx::core::cu
