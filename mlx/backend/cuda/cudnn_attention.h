// scaled_dot_product_attention through cuDNN's fused attention (cudnn_attention.cpp), for the
// inputs the flash kernels take (flash_attention.h), where the build found cuDNN's frontend
// headers and cuDNN loads. Each returns false, having run nothing, where cuDNN declines: the
// caller then runs the flash kernels.
#pragma once

#include "mlx/array.h"

namespace mlx::core::cu {

#ifdef MLX_CUDA_HAS_CUDNN_FRONTEND

// out = softmax(scale * q k^T [causal, bottom-right aligned]) v. q, k, v as
// flash::kernel_operand returns them, out allocated, all non-empty. Where lse is not null, also
// each row's natural-log log-sum-exp of its scaled scores there (cuDNN's stats: B * N_q * T_q
// floats, dense).
bool cudnn_attention(const array& q, const array& k, const array& v, array& out, float* lse,
                     float scale, bool causal);

// dq, dk, dv (allocated) of the above, given its out, the cotangent d_out and, where not null,
// the lse it wrote (else a forward pass with stats recomputes it first).
bool cudnn_attention_backward(const array& q, const array& k, const array& v, const array& out,
                              const array& d_out, const float* lse, array& dq, array& dk, array& dv,
                              float scale, bool causal);

#else

inline bool cudnn_attention(const array&, const array&, const array&, array&, float*, float, bool) {
  return false;
}
inline bool cudnn_attention_backward(const array&, const array&, const array&, const array&,
                                     const array&, const float*, array&, array&, array&, float,
                                     bool) {
  return false;
}

#endif

}  // namespace mlx::core::cu
