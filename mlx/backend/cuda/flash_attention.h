// The fused attention kernel (flash_attention.cu), for the inputs
// fast::attention_gpu_kernel_applies accepts; the others run the composite (attention.cpp).
#pragma once

#include "mlx/array.h"

namespace mlx::core::cu {

// out (B, N_q, T_q, D) = softmax(scale * q k^T [causal] [mask]) v for q (B, N_q, T_q, D) and
// k, v (B, N_kv, T_kv, D), N_q a multiple of N_kv: operands as flash::kernel_operand returns
// them, out allocated (flash::allocate_in_order_of), none empty. mask, where not null, is the
// op's mask array broadcast to (B, N_q, T_q, T_kv): bool_ (true keeps a score) or out's dtype
// (added to the scaled scores), any strides. Where lse is not null, also each row's
// natural-log log-sum-exp of its scaled, masked scores there (B * N_q * T_q floats, dense;
// -inf for a row that sees no key).
void flash_attention(const array& q, const array& k, const array& v, const array* mask, array& out,
                     float* lse, float scale, bool causal);

// Decoding (flash_decode.cu): the same forward for few query rows per key/value head (at most
// 16 of group * T_q, so T_q = 1 with up to 16 query heads per key/value head) against a long
// cache, the keys split over every SM. Where flash_decode_applies is true; operands, out and
// lse as for flash_attention.
bool flash_decode_applies(const array& q, const array& k, bool causal);
void flash_decode(const array& q, const array& k, const array& v, array& out, float* lse,
                  float scale, bool causal);

// The backward pass (flash_attention_backward.cu): dq, dk, dv (allocated) of the inputs
// above, given the forward's out and its cotangent d_out, operands as above, and the
// forward's lse (as flash_attention writes it) where not null; without it each row's
// log-sum-exp is recomputed by an output-less forward pass first. The probabilities are
// recomputed tile by tile, never the [T_q, T_kv] matrix. The mask gets no gradient.
void flash_attention_backward(const array& q, const array& k, const array& v, const array* mask,
                              const array& out, const array& d_out, const float* lse, array& dq,
                              array& dk, array& dv, float scale, bool causal);

namespace flash {

// `a` itself where the kernels can address its rows in place (the last dimension contiguous,
// every other stride a multiple of 8 elements, the data 16-byte aligned), else a dense copy of
// `dtype`. So the time-major views an attention layer passes need no copy.
array kernel_operand(const array& a, Dtype dtype);

// Gives `out` (B, N, T, D) a device buffer in `like`'s axis order: time-major, (B, T, N, D) in
// memory, where like's heads lie within its time steps, so that the usual
// y.transpose(0, 2, 1, 3).reshape(B, T, N * D) of a result (or of a gradient) is a view.
void allocate_in_order_of(array& out, const array& like);

struct AttentionShape;  // flash_forward.cuh

// For the backward pass: each query row's log2-sum-exp2 of its scores times scale * log2(e),
// B * N_q * T_q floats at lse, -inf for rows that see no key. q, k and v as kernel_operand
// returns them, T_kv > 0, `shape` theirs with the mask's live tiles marked (MarkedShape), so
// that the backward's own launch reuses them.
void forward_lse(const array& q, const array& k, const array& v, const AttentionShape& shape,
                 float* lse, float scale);

// The lse of rows that see no key (T_kv = 0): n floats of -inf at lse.
void no_key_lse(float* lse, int64_t n);

}  // namespace flash

}  // namespace mlx::core::cu
