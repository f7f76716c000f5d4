// GPU kernels of the layout primitives that copy (the views are in backend/common/views.cpp),
// and of the creation primitives.
#include "mlx/backend/common/views.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/primitives/creation.h"
#include "mlx/primitives/shape.h"
#include "mlx/runtime/kernel_counter.h"

namespace mlx::core {

void AsType::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::copy_to_contiguous(inputs[0], out);
}

void Copy::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.flags().row_contiguous && in.data_size() == in.size()) {
    out.copy_shared_buffer(in);
  } else {
    cu::allocate(out);
    cu::copy_strided(in, in.strides(), 0, out, out.strides(), 0, in.shape());
  }
}

void Reshape::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (reshape_as_view(in, out)) {
    return;
  }
  cu::allocate(out);
  cu::copy_strided(in, in.strides(), 0, out, row_major_strides(in.shape()), 0, in.shape());
}

void View::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (reinterpret_as_view(in, out)) {
    return;
  }
  array dense(in.shape(), in.dtype(), nullptr, {});
  cu::allocate(dense);
  cu::copy_strided(in, in.strides(), 0, dense, dense.strides(), 0, in.shape());
  set_view(dense, out, row_major_strides(out.shape()));
}

void Concatenate::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (concatenate_as_view(inputs, axis_, out)) {
    detail::count_path("Concatenate:view");
    return;
  }
  cu::allocate(out);
  int64_t offset = 0;
  for (const auto& in : inputs) {
    cu::copy_strided(in, in.strides(), 0, out, out.strides(), offset, in.shape());
    offset += in.shape(axis_) * out.strides()[axis_];
  }
}

void SliceUpdate::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  const array& update = inputs[1];
  if (src.is_donatable() && src.flags().contiguous) {
    out.copy_shared_buffer(src);
  } else {
    cu::allocate(out);
    cu::copy_strided(src, src.strides(), 0, out, out.strides(), 0, src.shape());
  }
  int64_t offset = 0;
  Strides strides(out.ndim());
  for (int i = 0; i < out.ndim(); ++i) {
    offset += static_cast<int64_t>(start_[i]) * out.strides()[i];
    strides[i] = out.strides()[i] * strides_[i];
  }
  cu::copy_strided(update, update.strides(), 0, out, strides, offset, update.shape());
}

// The input is the fill value already broadcast to the output shape.
void Full::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::copy_to_contiguous(inputs[0], out);
}

namespace {
template <typename T>
__global__ void arange_kernel(T* out, int64_t n, double start, double step) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = cu::cast_to<T>(start + static_cast<double>(i) * step);
  }
}
}  // namespace

void Arange::eval_gpu(const std::vector<array>&, array& out) {
  cu::allocate(out);
  int64_t n = static_cast<int64_t>(out.size());
  if (n == 0) {
    return;
  }
  dispatch_real<cu::DeviceTypes>(out.dtype(), "arange", [&]<typename T>() {
    arange_kernel<T>
        <<<cu::blocks_for(n), cu::kThreads, 0, cu::stream()>>>(out.gpu_data<T>(), n, start_, step_);
  });
  cu::check_launch("arange");
}

}  // namespace mlx::core
