// The primitives that have no CUDA kernel yet, one per line. This list must end empty.
//
// Until then each runs its CPU kernel on the GPU stream: the inputs come to the host once
// (ordered after the GPU work that made them), the outputs are host buffers that move to the
// GPU when a GPU kernel reads them. Correct everywhere, fast nowhere.
#include "mlx/backend/cuda/host_fallback.h"
#include "mlx/primitives/with_kernels.h"

namespace mlx::core {

#define MLX_NO_GPU_KERNEL(P)                                             \
  void P::eval_gpu(const std::vector<array>& inputs, Outputs& outputs) { \
    cu::inputs_to_host(inputs);                                          \
    eval_cpu(inputs, outputs);                                           \
  }

#ifndef MLX_CUDA_HAS_CUSOLVER
MLX_NO_GPU_KERNEL(Inverse)
MLX_NO_GPU_KERNEL(Cholesky)
MLX_NO_GPU_KERNEL(Solve)
MLX_NO_GPU_KERNEL(QRF)
MLX_NO_GPU_KERNEL(SVD)
MLX_NO_GPU_KERNEL(Eigh)
MLX_NO_GPU_KERNEL(Eig)
MLX_NO_GPU_KERNEL(LUF)
#endif
#ifndef MLX_CUDA_HAS_CUFFT
MLX_NO_GPU_KERNEL(FFT)
#endif

}  // namespace mlx::core
