// The fused backward pass of scaled_dot_product_attention on the GPU (the kernel is in
// flash_backward.cuh), for the inputs the forward kernel takes: the row log-sum-exp comes
// from an output-less forward pass, delta = rowsum(dO * O) from row_dots, and dQ is summed in
// float32 and converted at the end.
#include "mlx/backend/cuda/copy.cuh"
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

void flash_attention_backward(const array& queries, const array& keys, const array& values,
                              const array& out, const array& d_out, array& dq, array& dk, array& dv,
                              float scale, bool causal) {
  array q = dense_copy(queries), k = dense_copy(keys), v = dense_copy(values);
  array o = dense_copy(out), g = dense_copy(d_out, out.dtype());
  for (array* a : {&dq, &dk, &dv}) {
    allocate(*a);
  }
  const int64_t rows = q.shape(0) * q.shape(1) * q.shape(2);
  if (q.size() == 0 || k.shape(2) == 0) {  // no queries or no keys: every gradient is zero
    for (array* a : {&dq, &dk, &dv}) {
      if (a->nbytes() > 0) {
        MLX_CUDA_CHECK(cudaMemsetAsync(a->gpu_data<char>(), 0, a->nbytes(), stream()));
      }
    }
    return;
  }
  Scratch lse(rows * sizeof(float)), delta(rows * sizeof(float));
  Scratch dq_acc(q.size() * sizeof(float));
  MLX_CUDA_CHECK(cudaMemsetAsync(dq_acc.as<void>(), 0, q.size() * sizeof(float), stream()));
  flash_attention_lse(q, k, v, lse.as<float>(), scale, causal);
  flash::dispatch(q.dtype(), q.shape(3), [&]<typename T, int D>() {
    flash::row_dots<T, D><<<blocks_for(rows * 32), kThreads, 0, stream()>>>(
        o.gpu_data<T>(), g.gpu_data<T>(), delta.as<float>(), rows);
    check(flash::launch_backward<T, D>(q.gpu_data<T>(), k.gpu_data<T>(), v.gpu_data<T>(),
                                       g.gpu_data<T>(), lse.as<float>(), delta.as<float>(),
                                       dq_acc.as<float>(), dk.gpu_data<T>(), dv.gpu_data<T>(),
                                       flash::attention_shape(q, k, causal), scale, stream()),
          "scaled_dot_product_attention vjp (flash)");
    float_to<T><<<blocks_for(q.size()), kThreads, 0, stream()>>>(dq_acc.as<float>(),
                                                                 dq.gpu_data<T>(), q.size());
  });
  check_launch("scaled_dot_product_attention vjp (flash)");
}

}  // namespace mlx::core::cu
