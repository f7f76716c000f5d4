// The fused backward pass of scaled_dot_product_attention on the GPU (the kernel is in
// flash_backward.cuh), for the inputs the forward kernel takes: the row log-sum-exp is the
// forward's (its natural logs converted to base 2 by row_dots) or, where the forward did not
// keep it, comes from an output-less forward pass; delta = rowsum(dO * O) from row_dots, and
// dQ is summed in float32 and converted at the end. Operands and gradients keep their inputs'
// layouts.
#include "mlx/backend/cuda/flash_attention.h"
#include "mlx/backend/cuda/flash_backward.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"

namespace mlx::core::cu {

namespace {

template <typename T>
__global__ void float_to(const float* src, T* dst, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = static_cast<T>(src[i]);
  }
}

}  // namespace

void flash_attention_backward(const array& q, const array& k, const array& v, const array* mask,
                              const array& o, const array& g, const float* lse_ln, array& dq,
                              array& dk, array& dv, float scale, bool causal) {
  const Dtype dtype = o.dtype();
  const int64_t rows = q.shape(0) * q.shape(1) * q.shape(2);
  Scratch lse(rows * sizeof(float)), delta(rows * sizeof(float));
  // dq summed in float in dq's layout, so that the conversion is one flat pass.
  Scratch dq_acc(q.size() * sizeof(float));
  MLX_CUDA_CHECK(cudaMemsetAsync(dq_acc.as<void>(), 0, q.size() * sizeof(float), stream()));
  const flash::Heads<float> dq_heads{dq_acc.as<float>(), dq.strides(0), dq.strides(1),
                                     dq.strides(2)};
  const flash::MarkedShape marked(q, k, causal, mask);
  if (lse_ln == nullptr) {
    flash::forward_lse(q, k, v, marked.shape, lse.as<float>(), scale);
  }
  flash::dispatch(dtype, q.shape(3), [&]<typename T, int D>() {
    flash::row_dots<T, D><<<blocks_for(rows * 32), kThreads, 0, stream()>>>(
        flash::heads_of<const T>(o), flash::heads_of<const T>(g), delta.as<float>(), q.shape(1),
        q.shape(2), rows, lse_ln, lse.as<float>());
    check(flash::launch_backward<T, D>(
              flash::heads_of<const T>(q), flash::heads_of<const T>(k), flash::heads_of<const T>(v),
              flash::heads_of<const T>(g), lse.as<float>(), delta.as<float>(), dq_heads,
              flash::heads_of<T>(dk), flash::heads_of<T>(dv), marked.shape, scale, stream()),
          "scaled_dot_product_attention vjp (flash)");
    float_to<T><<<blocks_for(q.size()), kThreads, 0, stream()>>>(dq_acc.as<float>(),
                                                                 dq.gpu_data<T>(), q.size());
  });
  check_launch("scaled_dot_product_attention vjp (flash)");
}

}  // namespace mlx::core::cu
