// Softmax and LogSumExp over the last axis: a block per row keeps an online (max, sum) pair per
// thread, combines them, then (softmax) writes exp(x - max) / sum. 16-bit inputs compute in
// float32. The fused one-pass kernels of the next issue replace these.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/primitives/reduction.h"

namespace mlx::core {

namespace {

using namespace cu;

template <typename A>
struct MaxSum {
  A m, s;
};

template <typename A>
__device__ __forceinline__ MaxSum<A> combine(MaxSum<A> a, MaxSum<A> b) {
  if (::isnan(a.m) || ::isnan(b.m)) {
    return {a.m + b.m, a.s + b.s};  // NaN propagates
  }
  A m = a.m > b.m ? a.m : b.m;
  if (m == -cuda::std::numeric_limits<A>::infinity()) {
    return {m, A(0)};
  }
  return {m, a.s * ::exp(a.m - m) + b.s * ::exp(b.m - m)};
}

template <typename A>
__device__ MaxSum<A> row_max_sum(MaxSum<A> v) {
  __shared__ A sm[32], ss[32];
  for (int o = 16; o > 0; o /= 2) {
    MaxSum<A> other{__shfl_down_sync(0xffffffff, v.m, o), __shfl_down_sync(0xffffffff, v.s, o)};
    v = combine(v, other);
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    sm[warp] = v.m;
    ss[warp] = v.s;
  }
  __syncthreads();
  if (warp == 0) {
    int warps = blockDim.x / 32;
    v = lane < warps ? MaxSum<A>{sm[lane], ss[lane]}
                     : MaxSum<A>{-cuda::std::numeric_limits<A>::infinity(), A(0)};
    for (int o = 16; o > 0; o /= 2) {
      MaxSum<A> other{__shfl_down_sync(0xffffffff, v.m, o), __shfl_down_sync(0xffffffff, v.s, o)};
      v = combine(v, other);
    }
    if (lane == 0) {
      sm[0] = v.m;
      ss[0] = v.s;
    }
  }
  __syncthreads();
  return {sm[0], ss[0]};
}

template <typename T, bool kSoftmax>
__global__ void softmax_rows(const T* in, T* out, int64_t n) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* x = in + int64_t(blockIdx.x) * n;
  MaxSum<A> v{-cuda::std::numeric_limits<A>::infinity(), A(0)};
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    A xi = static_cast<A>(op::up(x[i]));
    v = combine(v, MaxSum<A>{xi, A(1)});
  }
  MaxSum<A> r = row_max_sum(v);
  if constexpr (kSoftmax) {
    T* y = out + int64_t(blockIdx.x) * n;
    A inv = A(1) / r.s;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      y[i] = cast_to<T>(::exp(static_cast<A>(op::up(x[i])) - r.m) * inv);
    }
  } else if (threadIdx.x == 0) {
    A m = r.m;
    out[blockIdx.x] = cast_to<T>(::isinf(m) ? m : m + ::log(r.s));
  }
}

template <bool kSoftmax>
void softmax_gpu(const array& in_, array& out, const char* name) {
  if (out.size() == 0) {
    cu::allocate(out);
    return;
  }
  array in = dense_copy(in_);
  int64_t n = in.shape(-1);
  int64_t rows = kSoftmax ? static_cast<int64_t>(in.size()) / std::max<int64_t>(n, 1)
                          : static_cast<int64_t>(out.size());
  if (kSoftmax) {
    out.set_gpu_data(allocator::gpu_malloc(out.nbytes()));
  } else {
    cu::allocate(out);
  }
  int threads = 32;
  while (threads < 256 && threads * 4 < n) {
    threads *= 2;
  }
  dispatch_float<DeviceTypes>(in.dtype(), name, [&]<typename T>() {
    softmax_rows<T, kSoftmax><<<static_cast<unsigned>(rows), threads, 0, stream()>>>(
        in.gpu_data<T>(), out.gpu_data<T>(), n);
  });
  check_launch(name);
}

}  // namespace

void Softmax::eval_gpu(const std::vector<array>& inputs, array& out) {
  softmax_gpu<true>(inputs[0], out, "softmax");
}

void LogSumExp::eval_gpu(const std::vector<array>& inputs, array& out) {
  softmax_gpu<false>(inputs[0], out, "logsumexp");
}

}  // namespace mlx::core
