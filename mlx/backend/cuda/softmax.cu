// Softmax and LogSumExp over the last axis on the GPU: the input made dense, then the row
// kernels of softmax_kernels.cuh. `precise` needs no path of its own: 16-bit inputs always
// compute in float32.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/softmax_kernels.cuh"
#include "mlx/primitives/reduction.h"

namespace mlx::core {

namespace {

using namespace cu;

template <bool kSoftmax>
void softmax_gpu(const array& in_, array& out, const char* name) {
  allocate(out);
  if (out.size() == 0) {
    return;
  }
  array in = dense_copy(in_);
  int d = in.shape(-1);
  int64_t rows = kSoftmax ? static_cast<int64_t>(in.size()) / d : static_cast<int64_t>(out.size());
  dispatch_float<DeviceTypes>(in.dtype(), name, [&]<typename T>() {
    launch_softmax<T, kSoftmax>(in.gpu_data<T>(), out.gpu_data<T>(), rows, d, row_config<T>(d),
                                stream());
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
