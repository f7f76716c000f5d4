// RMSNorm and LayerNorm on the GPU, forward and backward: inputs made dense (a broadcast or
// strided weight becomes a plain row), then the row kernels of norm_kernels.cuh.
#include <optional>

#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/norm_kernels.cuh"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cu;

std::optional<array> dense_param(const std::vector<array>& inputs, bool present, int index) {
  if (!present) {
    return std::nullopt;
  }
  return dense_copy(inputs[index]);
}

template <typename T>
const T* data_or_null(const std::optional<array>& a) {
  return a ? a->gpu_data<T>() : nullptr;
}

// inputs: {x, weight?, bias?}.
template <bool kLayer>
void norm_gpu(const std::vector<array>& inputs, array& out, bool has_weight, bool has_bias,
              float eps, const char* name) {
  allocate(out);
  if (out.size() == 0) {
    return;
  }
  array x = dense_copy(inputs[0]);
  int d = x.shape(-1);
  int64_t rows = static_cast<int64_t>(x.size()) / d;
  std::optional<array> w = dense_param(inputs, has_weight, 1);
  std::optional<array> b = dense_param(inputs, has_bias, 1 + has_weight);
  dispatch_float<DeviceTypes>(out.dtype(), name, [&]<typename T>() {
    launch_norm<T, kLayer>(x.gpu_data<T>(), data_or_null<T>(w), data_or_null<T>(b),
                           out.gpu_data<T>(), rows, d, eps, row_config<T>(d), cu::stream());
  });
  check_launch(name);
}

// outputs: {dx, dweight?, dbias?}; inputs {x, weight?, cotangent}.
template <bool kLayer>
void norm_vjp_gpu(const std::vector<array>& inputs, std::vector<array>& outputs, bool has_weight,
                  bool has_bias, float eps, const char* name) {
  for (array& o : outputs) {
    allocate(o);
  }
  array x = dense_copy(inputs[0]);
  array g = dense_copy(inputs.back());
  std::optional<array> w = dense_param(inputs, has_weight, 1);
  int d = x.shape(-1);
  if (d == 0) {
    return;
  }
  int64_t rows = static_cast<int64_t>(x.size()) / d;
  dispatch_float<DeviceTypes>(x.dtype(), name, [&]<typename T>() {
    using A = acc_t<T>;
    NormVjpPlan plan = plan_norm_vjp<T, kLayer>(rows, d, norm_vjp_config<T>(d),
                                                device(0).props.multiProcessorCount);
    Scratch scratch(plan.scratch_bytes(has_weight + has_bias, sizeof(A)));
    launch_norm_vjp<T, kLayer>(
        plan, x.gpu_data<T>(), data_or_null<T>(w), g.gpu_data<T>(), outputs[0].gpu_data<T>(),
        has_weight ? outputs[1].gpu_data<T>() : nullptr,
        has_bias ? outputs.back().gpu_data<T>() : nullptr, scratch.as<A>(), eps, cu::stream());
  });
  check_launch(name);
}

}  // namespace

void RMSNormVJP::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  norm_vjp_gpu<false>(inputs, outputs, has_weight_, false, eps_, "rms_norm_vjp");
}

void LayerNormVJP::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  norm_vjp_gpu<true>(inputs, outputs, has_weight_, has_bias_, eps_, "layer_norm_vjp");
}

void RMSNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  norm_gpu<false>(inputs, out, has_weight_, false, eps_, "rms_norm");
}

void LayerNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  norm_gpu<true>(inputs, out, has_weight_, has_bias_, eps_, "layer_norm");
}

}  // namespace mlx::core::fast
