// Hadamard::eval_gpu: one block per row, the row in shared memory (float32, float64 for
// float64): a fast Walsh-Hadamard transform of each 2^k block (log 2^k passes over the row),
// then the product with H_m across the m blocks and the scale on the way out
// (backend/common/hadamard_matrices.h). Rows too long for shared memory run on the host.
#include "mlx/backend/common/hadamard_matrices.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/host_fallback.h"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/primitives/hadamard.h"

namespace mlx::core {

namespace {

using namespace cu;

constexpr int kMaxM = 28;

struct SmallHadamard {
  int m;
  int8_t h[kMaxM * kMaxM];  // row-major +1 / -1
};

template <typename T, typename A>
__global__ void hadamard_kernel(const T* in, T* out, int64_t rows, int64_t n, int64_t p,
                                SmallHadamard hm, A scale, bool transpose) {
  extern __shared__ __align__(16) unsigned char smem[];
  A* buf = reinterpret_cast<A*>(smem);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* src = in + row * n;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      buf[i] = cast_to<A>(src[i]);
    }
    __syncthreads();
    const int64_t half = p / 2;
    for (int64_t h = 1; h < p; h *= 2) {
      for (int64_t t = threadIdx.x; t < n / 2; t += blockDim.x) {
        const int64_t b = t / half, k = t - b * half;
        const int64_t lo = b * p + (k / h) * 2 * h + (k % h);
        A u = buf[lo], v = buf[lo + h];
        buf[lo] = u + v;
        buf[lo + h] = u - v;
      }
      __syncthreads();
    }
    T* dst = out + row * n;
    for (int64_t idx = threadIdx.x; idx < n; idx += blockDim.x) {
      const int64_t i = idx / p, j = idx - i * p;
      A s = buf[idx];
      if (hm.m > 1) {
        s = A(0);
        for (int k = 0; k < hm.m; ++k) {
          const int8_t sign = transpose ? hm.h[k * hm.m + i] : hm.h[i * hm.m + k];
          s += sign > 0 ? buf[k * p + j] : -buf[k * p + j];
        }
      }
      dst[idx] = cast_to<T>(s * scale);
    }
    __syncthreads();  // before the next row overwrites buf
  }
}

}  // namespace

void Hadamard::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  const int64_t n = in.shape(-1);
  const size_t acc_size = in.dtype() == float64 ? 8 : 4;
  int max_smem = 0;
  MLX_CUDA_CHECK(
      cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, current().device));
  if (n * acc_size > static_cast<size_t>(max_smem)) {
    cu::inputs_to_host(inputs);  // a row longer than shared memory: the host kernel
    return eval_cpu(inputs, out);
  }
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  array x = dense_copy(in);
  const HadamardSize hs = hadamard_size(n);
  SmallHadamard hm{};
  hm.m = hs.m;
  const std::vector<int8_t>& h = hadamard_matrix(hs.m);
  std::copy(h.begin(), h.end(), hm.h);
  const int64_t rows = static_cast<int64_t>(x.size()) / n;
  const size_t smem = n * acc_size;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, 1 << 16));
  dispatch_float<DeviceTypes>(out.dtype(), "hadamard_transform", [&]<typename T>() {
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    auto kernel = hadamard_kernel<T, A>;
    MLX_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel<<<grid, kThreads, smem, cu::stream()>>>(x.gpu_data<T>(), out.gpu_data<T>(), rows, n,
                                                   hs.p, hm, static_cast<A>(scale_), transpose_);
  });
  check_launch("hadamard_transform");
}

}  // namespace mlx::core
