// RMSNorm and LayerNorm forward on the GPU: a block per row of the last axis, statistics in
// float32 (float64 for double inputs), weights and bias read with their own stride. The fused
// single-read kernels and the backward passes come with the next issue.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/backend/cuda/reduce_ops.cuh"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cu;

template <typename A>
__device__ A block_sum(A v, A* shared) {
  for (int o = 16; o > 0; o /= 2) {
    v += __shfl_down_sync(0xffffffff, v, o);
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) {
    shared[warp] = v;
  }
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x / 32) ? shared[lane] : A(0);
    for (int o = 16; o > 0; o /= 2) {
      v += __shfl_down_sync(0xffffffff, v, o);
    }
    if (lane == 0) {
      shared[0] = v;
    }
  }
  __syncthreads();
  return shared[0];
}

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Weight and bias: null for "absent" (1 and 0).
template <typename T, bool kLayer>
__global__ void norm_rows(const T* x, T* out, int64_t d, const T* w, int64_t w_stride,
                          const T* b, int64_t b_stride, float eps) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const T* row = x + int64_t(blockIdx.x) * d;
  T* orow = out + int64_t(blockIdx.x) * d;
  A mean = 0;
  if constexpr (kLayer) {
    A s = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      s += static_cast<A>(op::up(row[i]));
    }
    mean = block_sum(s, shared) / A(d);
  }
  A ss = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    A v = static_cast<A>(op::up(row[i])) - mean;
    ss += v * v;
  }
  A inv = A(1) / ::sqrt(block_sum(ss, shared) / A(d) + A(eps));
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    A v = (static_cast<A>(op::up(row[i])) - mean) * inv;
    if (w != nullptr) {
      v *= static_cast<A>(op::up(w[i * w_stride]));
    }
    if (b != nullptr) {
      v += static_cast<A>(op::up(b[i * b_stride]));
    }
    orow[i] = cast_to<T>(v);
  }
}

// A dense copy of x when it is not dense already.
array dense(const array& x) {
  if (is_dense(x)) {
    return x;
  }
  array c(x.shape(), x.dtype(), nullptr, {});
  copy_to_contiguous(x, c);
  return c;
}

template <bool kLayer>
void norm_gpu(const std::vector<array>& inputs, array& out, bool has_weight, bool has_bias,
              float eps, const char* name) {
  allocate(out);
  if (out.size() == 0) {
    return;
  }
  array x = dense(inputs[0]);
  int64_t d = x.shape(-1);
  int64_t rows = static_cast<int64_t>(x.size()) / d;
  int next = 1;
  const array* w = has_weight ? &inputs[next++] : nullptr;
  const array* b = has_bias ? &inputs[next++] : nullptr;
  int threads = 32;
  while (threads < 512 && threads * 8 < d) {
    threads *= 2;
  }
  dispatch_float(out.dtype(), name, [&]<typename T>() {
    norm_rows<T, kLayer><<<static_cast<unsigned>(rows), threads, 0, cu::stream()>>>(
        x.gpu_data<T>(), out.gpu_data<T>(), d, w ? w->gpu_data<T>() : nullptr,
        w ? w->strides().back() : 0, b ? b->gpu_data<T>() : nullptr, b ? b->strides().back() : 0,
        eps);
  });
  check_launch(name);
}

}  // namespace

void RMSNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  norm_gpu<false>(inputs, out, has_weight_, false, eps_, "rms_norm");
}

void LayerNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  norm_gpu<true>(inputs, out, has_weight_, has_bias_, eps_, "layer_norm");
}

}  // namespace mlx::core::fast
