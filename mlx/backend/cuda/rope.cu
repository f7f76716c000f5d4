// RoPE on the GPU: one thread per rotated pair. The angle (offset + t) * scale / freq is formed
// in double, as on the CPU, then its sine and cosine in the compute type.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cu;

template <typename T, bool kTraditional>
__global__ void rope_kernel(const T* x, T* out, int64_t rows, int64_t d, int64_t half, int64_t T_,
                            int64_t rows_per_batch, const int32_t* offsets, int64_t offset_stride,
                            bool per_batch, const float* freqs, int64_t freq_stride, double base,
                            int dims, float scale, bool inverse) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t pairs = rows * half;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < pairs; u += step) {
    const int64_t r = u / half, i = u % half;
    const int64_t b = per_batch ? r / rows_per_batch : 0;
    const double pos = static_cast<double>(offsets[b * offset_stride] + r % T_) * scale;
    const double inv_freq = freqs != nullptr ? 1.0 / static_cast<double>(freqs[i * freq_stride])
                                             : ::pow(base, -2.0 * static_cast<double>(i) / dims);
    const A theta = static_cast<A>(pos * inv_freq);
    A c = ::cos(theta), s = ::sin(theta);
    if (inverse) {
      s = -s;
    }
    const int64_t first = kTraditional ? 2 * i : i;
    const int64_t second = kTraditional ? 2 * i + 1 : i + half;
    const T* row = x + r * d;
    A x1 = static_cast<A>(op::up(row[first])), x2 = static_cast<A>(op::up(row[second]));
    out[r * d + first] = cast_to<T>(x1 * c - x2 * s);
    out[r * d + second] = cast_to<T>(x1 * s + x2 * c);
    // The features past the rotated ones are copied, by the thread of the row's first pair.
    if (i == 0) {
      for (int64_t j = 2 * half; j < d; ++j) {
        out[r * d + j] = row[j];
      }
    }
  }
}

}  // namespace

void RoPE::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& offset = inputs[1];
  allocate(out);
  if (out.size() == 0) {
    return;
  }
  array x = dense_copy(inputs[0]);
  int64_t half = dims_ / 2;
  if (half == 0) {
    copy_strided(x, x.strides(), 0, out, out.strides(), 0, x.shape());
    return;
  }
  int64_t d = x.shape(-1), T_ = x.shape(-2);
  int64_t rows = static_cast<int64_t>(x.size()) / d;
  int64_t rows_per_batch = rows / x.shape(0);
  const float* freqs = has_freqs_ ? inputs[2].gpu_data<float>() : nullptr;
  int64_t freq_stride = has_freqs_ ? inputs[2].strides()[0] : 0;
  bool per_batch = offset.size() > 1;
  int64_t offset_stride = offset.ndim() ? offset.strides()[0] : 0;
  dispatch_float<DeviceTypes>(x.dtype(), "rope", [&]<typename T>() {
    auto kernel = traditional_ ? rope_kernel<T, true> : rope_kernel<T, false>;
    kernel<<<blocks_for(rows * half), kThreads, 0, cu::stream()>>>(
        x.gpu_data<T>(), out.gpu_data<T>(), rows, d, half, T_, rows_per_batch,
        offset.gpu_data<int32_t>(), offset_stride, per_batch, freqs, freq_stride,
        static_cast<double>(base_), dims_, scale_, inverse_);
  });
  check_launch("rope");
}

}  // namespace mlx::core::fast
