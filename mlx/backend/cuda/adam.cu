// AdamUpdate on the GPU: one launch per kMaxTensors parameters of the step, in which a thread
// per element reads a parameter, its gradient and moments once and writes the new three (in
// place where the inputs can be donated). The learning rate and bias corrections are read on
// the device, so a schedule costs no host sync. 16-bit values compute in float32, float64 in
// double.
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

// 1 - beta formed in double, so that it rounds once.
struct AdamConstants {
  double b1, one_minus_b1, b2, one_minus_b2, eps, weight_decay;
};

// Up to kMaxTensors parameters per launch, passed by value (the table stays under the 4 KiB of
// kernel parameters); each block updates kChunk elements of one of them.
constexpr int kMaxTensors = 48;
constexpr int64_t kChunk = 4 * kThreads;

template <typename T>
struct AdamBatch {
  const T* in[4][kMaxTensors];  // p, g, m, v
  T* out[3][kMaxTensors];       // p', m', v'
  int64_t size[kMaxTensors];
  uint32_t first_block[kMaxTensors + 1];  // a prefix sum of the tensors' blocks
  int count = 0;
};

template <typename T, typename A = acc_t<T>>
__global__ void adam_update_kernel(const AdamBatch<T> batch, const A* lr, const A* c1, const A* c2,
                                   AdamConstants k) {
  // This block's tensor: the last whose first block is at or before it.
  int lo = 0, hi = batch.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (batch.first_block[mid] <= blockIdx.x) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const int t = lo;
  const T *p = batch.in[0][t], *g = batch.in[1][t], *m = batch.in[2][t], *v = batch.in[3][t];
  T *p_out = batch.out[0][t], *m_out = batch.out[1][t], *v_out = batch.out[2][t];
  const int64_t begin = int64_t(blockIdx.x - batch.first_block[t]) * kChunk;
  const int64_t end = min(begin + kChunk, batch.size[t]);
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

}  // namespace

void AdamUpdate::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const size_t n = parameters(inputs);
  const AdamConstants constants{beta1_, 1.0 - beta1_, beta2_, 1.0 - beta2_, eps_, weight_decay_};
  dispatch_float<DeviceTypes>(inputs[0].dtype(), "adam_update", [&]<typename T>() {
    using A = acc_t<T>;
    const A* lr = inputs[4 * n].gpu_data<A>();
    const A* c1 = inputs[4 * n + 1].gpu_data<A>();
    const A* c2 = inputs[4 * n + 2].gpu_data<A>();
    AdamBatch<T> batch;
    batch.first_block[0] = 0;
    auto launch = [&] {
      if (batch.count > 0) {
        adam_update_kernel<T><<<batch.first_block[batch.count], kThreads, 0, cu::stream()>>>(
            batch, lr, c1, c2, constants);
        check_launch("adam_update");
      }
      batch.count = 0;
    };
    std::deque<array> copies;  // dense copies of strided inputs, alive until their launch
    for (size_t k = 0; k < n; ++k) {
      const array* in[4];
      for (size_t i = 0; i < 4; ++i) {
        in[i] = &inputs[i * n + k];
        if (!is_dense(*in[i])) {
          copies.push_back(dense_copy(*in[i]));
          in[i] = &copies.back();
        }
      }
      // Each output may take over the buffer of the input it replaces.
      T* out[3] = {elementwise_output<T>(outputs[k], {in[0]}),
                   elementwise_output<T>(outputs[n + k], {in[2]}),
                   elementwise_output<T>(outputs[2 * n + k], {in[3]})};
      const int64_t size = static_cast<int64_t>(in[0]->size());
      if (size == 0) {
        continue;
      }
      const int c = batch.count++;
      for (int i = 0; i < 4; ++i) {
        batch.in[i][c] = in[i]->gpu_data<T>();
      }
      for (int i = 0; i < 3; ++i) {
        batch.out[i][c] = out[i];
      }
      batch.size[c] = size;
      batch.first_block[c + 1] =
          batch.first_block[c] + static_cast<uint32_t>((size + kChunk - 1) / kChunk);
      if (batch.count == kMaxTensors) {
        launch();
        copies.clear();
      }
    }
    launch();
  });
}

}  // namespace mlx::core::fast
