// The fused forward pass of scaled_dot_product_attention on the GPU (the kernel is in
// flash_forward.cuh): float16 / bfloat16, head dims 64, 80, 96 and 128, no mask or a causal
// one, grouped-query heads. The backward pass asks for each row's log-sum-exp only.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/flash_attention.h"
#include "mlx/backend/cuda/flash_forward.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"

namespace mlx::core::cu {

void flash_attention(const array& queries, const array& keys, const array& values, array& out,
                     float scale, bool causal) {
  array q = dense_copy(queries), k = dense_copy(keys), v = dense_copy(values);
  allocate(out);
  if (out.size() == 0) {
    return;
  }
  if (k.shape(2) == 0) {  // no keys: every row is zeros
    MLX_CUDA_CHECK(cudaMemsetAsync(out.gpu_data<char>(), 0, out.nbytes(), stream()));
    return;
  }
  flash::dispatch(q.dtype(), q.shape(3), [&]<typename T, int D>() {
    check(flash::launch_forward<T, D, true>(q.gpu_data<T>(), k.gpu_data<T>(), v.gpu_data<T>(),
                                            out.gpu_data<T>(), nullptr,
                                            flash::attention_shape(q, k, causal), scale, stream()),
          "scaled_dot_product_attention (flash)");
  });
}

void flash_attention_lse(const array& q, const array& k, const array& v, float* lse, float scale,
                         bool causal) {
  flash::dispatch(q.dtype(), q.shape(3), [&]<typename T, int D>() {
    check(flash::launch_forward<T, D, false>(q.gpu_data<T>(), k.gpu_data<T>(), v.gpu_data<T>(),
                                             nullptr, lse, flash::attention_shape(q, k, causal),
                                             scale, stream()),
          "scaled_dot_product_attention (flash log-sum-exp)");
  });
}

}  // namespace mlx::core::cu
