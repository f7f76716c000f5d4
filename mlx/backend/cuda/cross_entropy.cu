// CrossEntropy and CrossEntropyVJP on the GPU. Forward: a warp per row reads the logits once,
// each lane keeping a running max and exp-sum of its elements (online logsumexp), merged
// across the warp by shuffles; the target's logit is one more load. Backward: a thread per
// element writes (exp(x - lse) - one_hot) * g from the saved lse; g is float32 whatever the
// logits' dtype. Targets arrive as int64; a target outside [0, C) gives a NaN loss and a NaN
// gradient row, as on the CPU. Accumulation is float for 16- and 32-bit logits, double for
// float64.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cu;

// The logsumexp of the values pushed: finite ones summed against their running max; +inf and
// NaN decide the result on their own, -inf adds nothing.
template <typename A>
struct Lse {
  A max = -INFINITY;  // of the finite values
  A sum = 0;
  bool pos_inf = false, nan = false;

  __device__ void push(A x) {
    if (x != x) {
      nan = true;
    } else if (isinf(x)) {
      pos_inf |= x > 0;
    } else {
      if (x > max) {
        sum *= exp(max - x);  // 0 while max is -inf
        max = x;
      }
      sum += exp(x - max);
    }
  }
  __device__ void merge(const Lse& o) {
    nan |= o.nan;
    pos_inf |= o.pos_inf;
    const A m = max > o.max ? max : o.max;
    if (m != -INFINITY) {
      sum = sum * exp(max - m) + o.sum * exp(o.max - m);
      max = m;
    }
  }
  __device__ A value() const {
    if (nan) {
      return A(NAN);
    }
    if (pos_inf) {
      return A(INFINITY);
    }
    return max == -INFINITY ? A(-INFINITY) : max + log(sum);
  }
};

template <typename A>
__device__ Lse<A> shuffle(const Lse<A>& v, int lane_mask) {
  Lse<A> o;
  o.max = __shfl_xor_sync(0xffffffffu, v.max, lane_mask);
  o.sum = __shfl_xor_sync(0xffffffffu, v.sum, lane_mask);
  o.pos_inf = __shfl_xor_sync(0xffffffffu, int(v.pos_inf), lane_mask) != 0;
  o.nan = __shfl_xor_sync(0xffffffffu, int(v.nan), lane_mask) != 0;
  return o;
}

constexpr int kRowsPerBlock = 8;  // a warp each

template <typename T, typename A>
__global__ void cross_entropy_forward(const T* x, const int64_t* targets, float* loss, A* lse,
                                      int64_t rows, int64_t n) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; r < rows;
       r += int64_t(gridDim.x) * kRowsPerBlock) {
    const T* row = x + r * n;
    Lse<A> acc;
    for (int64_t i = lane; i < n; i += 32) {
      acc.push(cast_to<A>(row[i]));
    }
    for (int m = 16; m > 0; m /= 2) {
      acc.merge(shuffle(acc, m));
    }
    if (lane == 0) {
      const A l = acc.value();
      lse[r] = l;
      const int64_t t = targets[r];
      loss[r] = t >= 0 && t < n ? static_cast<float>(l - cast_to<A>(row[t])) : NAN;
    }
  }
}

template <typename T, typename A>
__global__ void cross_entropy_backward(const T* x, const int64_t* targets, const A* lse,
                                       const float* g, T* dx, int64_t rows, int64_t n) {
  const int64_t total = rows * n;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, c = i - r * n;
    const int64_t t = targets[r];
    A d = A(NAN);
    if (t >= 0 && t < n) {
      d = (exp(cast_to<A>(x[i]) - lse[r]) - (c == t ? A(1) : A(0))) * A(g[r]);
    }
    dx[i] = cast_to<T>(d);
  }
}

}  // namespace

void CrossEntropy::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& loss = outputs[0];
  array& lse = outputs[1];
  allocate(loss);
  allocate(lse);
  if (loss.size() == 0) {
    return;
  }
  array x = dense_copy(inputs[0]);
  array t = dense_copy(inputs[1], int64);
  const int64_t n = x.shape(-1), rows = static_cast<int64_t>(loss.size());
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 1 << 16));
  dispatch_float<DeviceTypes>(x.dtype(), "cross_entropy", [&]<typename T>() {
    using A = acc_t<T>;
    cross_entropy_forward<T, A><<<grid, kRowsPerBlock * 32, 0, cu::stream()>>>(
        x.gpu_data<T>(), t.gpu_data<int64_t>(), loss.gpu_data<float>(), lse.gpu_data<A>(), rows, n);
  });
  check_launch("cross_entropy");
}

void CrossEntropyVJP::eval_gpu(const std::vector<array>& inputs, array& out) {
  allocate(out);
  if (out.size() == 0) {
    return;
  }
  array x = dense_copy(inputs[0]);
  array t = dense_copy(inputs[1], int64);
  array lse = dense_copy(inputs[2]);
  array g = dense_copy(inputs[3]);
  const int64_t n = x.shape(-1), rows = static_cast<int64_t>(x.size()) / n;
  dispatch_float<DeviceTypes>(x.dtype(), "cross_entropy", [&]<typename T>() {
    using A = acc_t<T>;
    cross_entropy_backward<T, A><<<blocks_for(rows * n), kThreads, 0, cu::stream()>>>(
        x.gpu_data<T>(), t.gpu_data<int64_t>(), lse.gpu_data<A>(), g.gpu_data<float>(),
        out.gpu_data<T>(), rows, n);
  });
  check_launch("cross_entropy vjp");
}

}  // namespace mlx::core::fast
