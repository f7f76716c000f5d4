// AdamUpdate on the GPU: a thread per element reads the parameter, its gradient and moments
// once and writes the new three (in place where the inputs can be donated). The learning
// rate and bias corrections are read on the device, so a schedule costs no host sync.
// 16-bit values compute in float32, float64 in double.
#include <optional>

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

template <typename T, typename A = acc_t<T>>
__global__ void adam_update_kernel(const T* p, const T* g, const T* m, const T* v, const A* lr,
                                   const A* c1, const A* c2, AdamConstants k, T* p_out, T* m_out,
                                   T* v_out, int64_t n) {
  const A b1 = A(k.b1), one_minus_b1 = A(k.one_minus_b1), b2 = A(k.b2),
          one_minus_b2 = A(k.one_minus_b2), eps = A(k.eps), step = *lr;
  const A decay = A(1) - step * A(k.weight_decay);
  const A inv_c1 = A(1) / *c1, inv_c2 = A(1) / *c2;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
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
  std::optional<array> copies[4];
  const array* in[4];
  for (int i = 0; i < 4; ++i) {
    in[i] = &inputs[i];
    if (!is_dense(inputs[i])) {
      copies[i] = dense_copy(inputs[i]);
      in[i] = &*copies[i];
    }
  }
  const int64_t n = static_cast<int64_t>(inputs[0].size());
  dispatch_float<DeviceTypes>(inputs[0].dtype(), "adam_update", [&]<typename T>() {
    using A = acc_t<T>;
    // Each output may take over the buffer of the input it replaces.
    T* p_out = elementwise_output<T>(outputs[0], {in[0]});
    T* m_out = elementwise_output<T>(outputs[1], {in[2]});
    T* v_out = elementwise_output<T>(outputs[2], {in[3]});
    if (n == 0) {
      return;
    }
    adam_update_kernel<T><<<blocks_for(n), kThreads, 0, cu::stream()>>>(
        in[0]->gpu_data<T>(), in[1]->gpu_data<T>(), in[2]->gpu_data<T>(), in[3]->gpu_data<T>(),
        inputs[4].gpu_data<A>(), inputs[5].gpu_data<A>(), inputs[6].gpu_data<A>(),
        AdamConstants{beta1_, 1.0 - beta1_, beta2_, 1.0 - beta2_, eps_, weight_decay_}, p_out,
        m_out, v_out, n);
  });
  check_launch("adam_update");
}

}  // namespace mlx::core::fast
