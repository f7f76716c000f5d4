// scaled_dot_product_attention through cuDNN's fused attention (cudnn_attention.cpp), for the
// inputs the flash kernels take (flash_attention.h), where the build found cuDNN's frontend
// headers and cuDNN loads. Each returns false, having run nothing, where cuDNN declines: the
// caller then runs the flash kernels.
#pragma once

#include "mlx/array.h"

namespace mlx::core::cu {

#ifdef MLX_CUDA_HAS_CUDNN_FRONTEND

// out = softmax(scale * q k^T [causal, bottom-right aligned]) v. q, k, v as
// flash::kernel_operand returns them, out allocated, all non-empty.
bool cudnn_attention(const array& q, const array& k, const array& v, array& out, float scale,
                     bool causal);

// dq, dk, dv (allocated) of the above, given its out and the cotangent d_out.
bool cudnn_attention_backward(const array& q, const array& k, const array& v, const array& out,
                              const array& d_out, array& dq, array& dk, array& dv, float scale,
                              bool causal);

#else

inline bool cudnn_attention(const array&, const array&, const array&, array&, float, bool) {
  return false;
}
inline bool cudnn_attention_backward(const array&, const array&, const array&, const array&,
                                     const array&, array&, array&, array&, float, bool) {
  return false;
}

#endif

}  // namespace mlx::core::cu
