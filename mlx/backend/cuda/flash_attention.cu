// The fused forward pass of scaled_dot_product_attention on the GPU (the kernel is in
// flash_forward.cuh): float16 / bfloat16, head dims 64, 80, 96 and 128, causal or not, with or
// without a mask array, grouped-query heads, operands in any layout whose rows the kernels can
// address. A forward traced for a backward also writes each row's log-sum-exp (natural log, the
// primitive's lse output); a backward without it asks for the log-sum-exp only (base 2).
#include "mlx/backend/cuda/flash_attention.h"
#include "mlx/backend/cuda/flash_forward.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"

namespace mlx::core::cu {

namespace flash {

namespace {

__global__ void fill_neg_inf(float* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    x[i] = -INFINITY;
  }
}

}  // namespace

void no_key_lse(float* lse, int64_t n) {
  if (n > 0) {
    fill_neg_inf<<<blocks_for(n), kThreads, 0, stream()>>>(lse, n);
    check_launch("scaled_dot_product_attention (no keys)");
  }
}

void forward_lse(const array& q, const array& k, const array& v, const array* mask, float* lse,
                 float scale, bool causal) {
  dispatch(q.dtype(), q.shape(3), [&]<typename T, int D>() {
    check(launch_forward<T, D, false>(heads_of<const T>(q), heads_of<const T>(k),
                                      heads_of<const T>(v), Heads<T>{}, lse,
                                      attention_shape(q, k, causal, mask), scale, stream()),
          "scaled_dot_product_attention (flash log-sum-exp)");
  });
}

}  // namespace flash

void flash_attention(const array& q, const array& k, const array& v, const array* mask, array& out,
                     float* lse, float scale, bool causal) {
  flash::dispatch(out.dtype(), q.shape(3), [&]<typename T, int D>() {
    check(flash::launch_forward<T, D, true>(
              flash::heads_of<const T>(q), flash::heads_of<const T>(k), flash::heads_of<const T>(v),
              flash::heads_of<T>(out), lse, flash::attention_shape(q, k, causal, mask), scale,
              stream(),
              /*natural_lse=*/true),
          "scaled_dot_product_attention (flash)");
  });
}

}  // namespace mlx::core::cu
