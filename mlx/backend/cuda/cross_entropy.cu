// CrossEntropy and CrossEntropyVJP on the GPU. Forward: a warp per row reads the logits once,
// each lane keeping a running max and exp-sum of its elements (online logsumexp), merged
// across the warp by shuffles; the target's logit is one more load. Backward: (exp(x - lse) -
// one_hot) * g from the saved lse; g is float32 whatever the logits' dtype. Targets arrive as
// int64; a target outside [0, C) gives a NaN loss and a NaN gradient row, as on the CPU.
// Accumulation is float for 16- and 32-bit logits, double for float64.
//
// Rows of 16- and 32-bit logits that are whole 16-byte words (the LM-head case: a vocabulary
// padded to a multiple of 8) take vector paths: 16-byte loads and stores, the exponentials as
// exp2f of differences scaled by log2(e), the running max raised once per word. A row holding
// a NaN or an infinity is redone by the exact scalar path, which gives those their meaning.
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
constexpr float kLog2e = 1.4426950408889634f;

// One row's logsumexp by the exact scalar path, the warp's lanes striding over it.
template <typename T, typename A>
__device__ A row_lse_exact(const T* row, int64_t n, int lane) {
  Lse<A> acc;
  for (int64_t i = lane; i < n; i += 32) {
    acc.push(cast_to<A>(row[i]));
  }
  for (int m = 16; m > 0; m /= 2) {
    acc.merge(shuffle(acc, m));
  }
  return acc.value();
}

// The vector path's logsumexp of a row of n / kVec 16-byte words; sets `special` (for the
// whole warp) when the row holds a NaN or an infinity, whose result is then meaningless.
template <typename T>
__device__ float row_lse_words(const T* row, int64_t n, int lane, bool& special) {
  constexpr int kVec = 16 / sizeof(T);
  const uint4* words = reinterpret_cast<const uint4*>(row);
  float m = -INFINITY, sum = 0.f;
  bool bad = false;
  for (int64_t w = lane; w < n / kVec; w += 32) {
    const uint4 raw = words[w];
    const T* e = reinterpret_cast<const T*>(&raw);
    float x[kVec];
    float word_max = -INFINITY;
    for (int j = 0; j < kVec; ++j) {
      x[j] = cast_to<float>(e[j]);
      bad |= !isfinite(x[j]);
      word_max = fmaxf(word_max, x[j]);
    }
    if (word_max > m) {
      sum *= exp2f((m - word_max) * kLog2e);  // 0 while m is -inf
      m = word_max;
    }
    for (int j = 0; j < kVec; ++j) {
      sum += exp2f((x[j] - m) * kLog2e);
    }
  }
  special = __any_sync(0xffffffffu, bad);
  float row_max = m;
  for (int k = 16; k > 0; k /= 2) {
    row_max = fmaxf(row_max, __shfl_xor_sync(0xffffffffu, row_max, k));
  }
  float total = sum > 0.f ? sum * exp2f((m - row_max) * kLog2e) : 0.f;
  for (int k = 16; k > 0; k /= 2) {
    total += __shfl_xor_sync(0xffffffffu, total, k);
  }
  return row_max + logf(total);
}

template <typename T, typename A>
__global__ void cross_entropy_forward(const T* x, const int64_t* targets, float* loss, A* lse,
                                      int64_t rows, int64_t n, bool words) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; r < rows;
       r += int64_t(gridDim.x) * kRowsPerBlock) {
    const T* row = x + r * n;
    A l;
    bool special = true;
    if constexpr (sizeof(T) <= 4) {
      if (words) {
        l = row_lse_words(row, n, lane, special);
      }
    }
    if (special) {
      l = row_lse_exact<T, A>(row, n, lane);
    }
    if (lane == 0) {
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

// The backward's vector path: a block per row of n / kVec 16-byte words. exp2f of a NaN or an
// infinity is the exact path's exp of it, so special rows need no second pass here.
template <typename T>
__global__ void cross_entropy_backward_words(const T* x, const int64_t* targets, const float* lse,
                                             const float* g, T* dx, int64_t rows, int64_t n) {
  constexpr int kVec = 16 / sizeof(T);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t t = targets[r];
    const bool valid = t >= 0 && t < n;
    const float l = lse[r], scale = g[r];
    const uint4* in = reinterpret_cast<const uint4*>(x + r * n);
    uint4* out = reinterpret_cast<uint4*>(dx + r * n);
    for (int64_t w = threadIdx.x; w < n / kVec; w += blockDim.x) {
      const uint4 raw = in[w];
      const T* e = reinterpret_cast<const T*>(&raw);
      uint4 res;
      T* d = reinterpret_cast<T*>(&res);
      for (int j = 0; j < kVec; ++j) {
        const float p = exp2f((cast_to<float>(e[j]) - l) * kLog2e);
        const float one_hot = w * kVec + j == t ? 1.f : 0.f;
        d[j] = cast_to<T>(valid ? (p - one_hot) * scale : NAN);
      }
      out[w] = res;
    }
  }
}

// Whether every row of x (rows of n elements) is whole 16-byte words, 16-byte aligned.
bool rows_are_words(const array& x, int64_t n) {
  return x.itemsize() <= 4 && (n * x.itemsize()) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(x.gpu_data<char>()) % 16 == 0;
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
        x.gpu_data<T>(), t.gpu_data<int64_t>(), loss.gpu_data<float>(), lse.gpu_data<A>(), rows, n,
        rows_are_words(x, n));
  });
  check_launch("cross_entropy");
}

void CrossEntropyVJP::eval_gpu(const std::vector<array>& inputs, array& out) {
  // Each gradient element replaces its logit (read first, same index): the logits' buffer,
  // when it dies here, takes the gradient (the LM head's logits are the training step's
  // largest buffer).
  if (can_write_over(inputs[0], out)) {
    out.copy_shared_buffer(inputs[0]);
  } else {
    allocate(out);
  }
  if (out.size() == 0) {
    return;
  }
  array x = dense_copy(inputs[0]);
  array t = dense_copy(inputs[1], int64);
  array lse = dense_copy(inputs[2]);
  array g = dense_copy(inputs[3]);
  const int64_t n = x.shape(-1), rows = static_cast<int64_t>(x.size()) / n;
  // A block per row pays off for long rows. out is checked too: it may be the logits' own
  // buffer where x is an aligned copy of them.
  const bool words = rows_are_words(x, n) && rows_are_words(out, n) && n >= 8 * kThreads;
  dispatch_float<DeviceTypes>(x.dtype(), "cross_entropy", [&]<typename T>() {
    using A = acc_t<T>;
    if constexpr (sizeof(T) <= 4) {
      if (words) {
        const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, 1 << 20));
        cross_entropy_backward_words<T><<<grid, kThreads, 0, cu::stream()>>>(
            x.gpu_data<T>(), t.gpu_data<int64_t>(), lse.gpu_data<float>(), g.gpu_data<float>(),
            out.gpu_data<T>(), rows, n);
        return;
      }
    }
    cross_entropy_backward<T, A><<<blocks_for(rows * n), kThreads, 0, cu::stream()>>>(
        x.gpu_data<T>(), t.gpu_data<int64_t>(), lse.gpu_data<A>(), g.gpu_data<float>(),
        out.gpu_data<T>(), rows, n);
  });
  check_launch("cross_entropy vjp");
}

}  // namespace mlx::core::fast
