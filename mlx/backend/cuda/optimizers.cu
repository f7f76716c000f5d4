// Fused optimizer steps on the GPU (AdamUpdate, SgdUpdate): one launch per kMaxTensors
// parameters of the step, in which a thread per element reads a parameter, its gradient and
// state once and writes the new ones (in place where the inputs can be donated). The learning
// rate and bias corrections are read on the device, so a schedule costs no host sync. 16-bit
// values compute in float32, float64 in double.
#include <array>
#include <deque>

#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cu;

// Up to kMaxTensors parameters per launch, passed by value (the table stays under the 4 KiB of
// kernel parameters); each block updates kChunk elements of one of them.
constexpr int kMaxTensors = 48;
constexpr int64_t kChunk = 4 * kThreads;

template <typename T, int kIn, int kOut>
struct ParameterBatch {
  const T* in[kIn][kMaxTensors];  // parameter, gradient, state...
  T* out[kOut][kMaxTensors];      // new parameter, new state...
  int64_t size[kMaxTensors];
  uint32_t first_block[kMaxTensors + 1];  // a prefix sum of the tensors' blocks
  int count = 0;
};

// The elements [begin, end) of the batch's tensor `t` that this block updates.
template <typename T, int kIn, int kOut>
__device__ int block_tensor(const ParameterBatch<T, kIn, kOut>& batch, int64_t& begin,
                            int64_t& end) {
  // The last tensor whose first block is at or before this one.
  int lo = 0, hi = batch.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (batch.first_block[mid] <= blockIdx.x) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  begin = int64_t(blockIdx.x - batch.first_block[lo]) * kChunk;
  end = min(begin + kChunk, batch.size[lo]);
  return lo;
}

// For the n parameters of a step whose inputs are kIn groups of n arrays and outputs kOut
// groups: dense inputs, outputs that take over input donors[j]'s buffer where they can, then
// launch(batch, blocks) once per kMaxTensors non-empty parameters.
template <typename T, int kIn, int kOut, typename Launch>
void for_each_batch(const std::vector<array>& inputs, std::vector<array>& outputs, size_t n,
                    const std::array<int, kOut>& donors, Launch&& launch) {
  ParameterBatch<T, kIn, kOut> batch;
  batch.first_block[0] = 0;
  std::deque<array> copies;  // dense copies of strided inputs, alive until their launch
  auto flush = [&] {
    if (batch.count > 0) {
      launch(batch, batch.first_block[batch.count]);
    }
    batch.count = 0;
    copies.clear();
  };
  for (size_t k = 0; k < n; ++k) {
    const array* in[kIn];
    for (int i = 0; i < kIn; ++i) {
      in[i] = &inputs[i * n + k];
      if (!is_dense(*in[i])) {
        copies.push_back(dense_copy(*in[i]));
        in[i] = &copies.back();
      }
    }
    T* out[kOut];
    for (int j = 0; j < kOut; ++j) {
      out[j] = elementwise_output<T>(outputs[j * n + k], {in[donors[j]]});
    }
    const int64_t size = static_cast<int64_t>(in[0]->size());
    if (size == 0) {
      continue;
    }
    const int c = batch.count++;
    for (int i = 0; i < kIn; ++i) {
      batch.in[i][c] = in[i]->template gpu_data<T>();
    }
    for (int j = 0; j < kOut; ++j) {
      batch.out[j][c] = out[j];
    }
    batch.size[c] = size;
    batch.first_block[c + 1] =
        batch.first_block[c] + static_cast<uint32_t>((size + kChunk - 1) / kChunk);
    if (batch.count == kMaxTensors) {
      flush();
    }
  }
  flush();
}

// 1 - beta formed in double, so that it rounds once.
struct AdamConstants {
  double b1, one_minus_b1, b2, one_minus_b2, eps, weight_decay;
};

template <typename T, typename A = acc_t<T>>
__global__ void adam_update_kernel(const ParameterBatch<T, 4, 3> batch, const A* lr, const A* c1,
                                   const A* c2, AdamConstants k) {
  int64_t begin, end;
  const int t = block_tensor(batch, begin, end);
  const T *p = batch.in[0][t], *g = batch.in[1][t], *m = batch.in[2][t], *v = batch.in[3][t];
  T *p_out = batch.out[0][t], *m_out = batch.out[1][t], *v_out = batch.out[2][t];
  const A b1 = A(k.b1), one_minus_b1 = A(k.one_minus_b1), b2 = A(k.b2),
          one_minus_b2 = A(k.one_minus_b2), eps = A(k.eps), step = *lr;
  const A decay = A(1) - step * A(k.weight_decay);
  const A inv_c1 = A(1) / *c1, inv_c2 = A(1) / *c2;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const A gi = cast_to<A>(g[i]);
    const A mi = b1 * cast_to<A>(m[i]) + one_minus_b1 * gi;
    const A vi = b2 * cast_to<A>(v[i]) + one_minus_b2 * gi * gi;
    const A update = (mi * inv_c1) / (sqrt(vi * inv_c2) + eps);
    p_out[i] = cast_to<T>(cast_to<A>(p[i]) * decay - step * update);
    m_out[i] = cast_to<T>(mi);
    v_out[i] = cast_to<T>(vi);
  }
}

struct SgdConstants {
  double momentum, one_minus_dampening, weight_decay;
  bool nesterov;
};

// kIn 2: {p, g} -> {p'}; kIn 3: {p, g, v} -> {p', v'} (momentum).
template <typename T, int kIn, int kOut, typename A = acc_t<T>>
__global__ void sgd_update_kernel(const ParameterBatch<T, kIn, kOut> batch, const A* lr,
                                  SgdConstants k) {
  int64_t begin, end;
  const int t = block_tensor(batch, begin, end);
  const T *p = batch.in[0][t], *g = batch.in[1][t];
  T* p_out = batch.out[0][t];
  const A step = *lr, wd = A(k.weight_decay), mu = A(k.momentum),
          one_minus_damp = A(k.one_minus_dampening);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const A pi = cast_to<A>(p[i]);
    const A gi = cast_to<A>(g[i]) + wd * pi;
    A update = gi;
    if constexpr (kIn == 3) {
      const A vi = mu * cast_to<A>(batch.in[2][t][i]) + one_minus_damp * gi;
      batch.out[1][t][i] = cast_to<T>(vi);
      update = k.nesterov ? gi + mu * vi : vi;
    }
    p_out[i] = cast_to<T>(pi - step * update);
  }
}

}  // namespace

void AdamUpdate::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const size_t n = parameters(inputs);
  const AdamConstants constants{beta1_, 1.0 - beta1_, beta2_, 1.0 - beta2_, eps_, weight_decay_};
  dispatch_float<DeviceTypes>(inputs[0].dtype(), "adam_update", [&]<typename T>() {
    using A = acc_t<T>;
    const A* lr = inputs[4 * n].gpu_data<A>();
    const A* c1 = inputs[4 * n + 1].gpu_data<A>();
    const A* c2 = inputs[4 * n + 2].gpu_data<A>();
    // p', m', v' replace p, m, v.
    for_each_batch<T, 4, 3>(inputs, outputs, n, {0, 2, 3}, [&](const auto& batch, uint32_t blocks) {
      adam_update_kernel<T><<<blocks, kThreads, 0, cu::stream()>>>(batch, lr, c1, c2, constants);
      check_launch("adam_update");
    });
  });
}

void SgdUpdate::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const size_t n = parameters(inputs);
  const SgdConstants constants{momentum_, 1.0 - dampening_, weight_decay_, nesterov_};
  dispatch_float<DeviceTypes>(inputs[0].dtype(), "sgd_update", [&]<typename T>() {
    using A = acc_t<T>;
    const A* lr = inputs.back().gpu_data<A>();
    auto launch = [&](const auto& batch, uint32_t blocks) {
      sgd_update_kernel<<<blocks, kThreads, 0, cu::stream()>>>(batch, lr, constants);
      check_launch("sgd_update");
    };
    if (has_momentum()) {
      for_each_batch<T, 3, 2>(inputs, outputs, n, {0, 2}, launch);  // p', v' replace p, v
    } else {
      for_each_batch<T, 2, 1>(inputs, outputs, n, {0}, launch);
    }
  });
}

}  // namespace mlx::core::fast
