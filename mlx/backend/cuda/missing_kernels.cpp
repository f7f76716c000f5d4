// The primitives that have no CUDA kernel yet, one per line. This list must end empty.
#include <stdexcept>

#include "mlx/primitives/with_kernels.h"
#include "mlx/utils.h"

namespace mlx::core {

#define MLX_NO_GPU_KERNEL(P)                                                \
  void P::eval_gpu(const std::vector<array>&, Outputs&) {                   \
    throw std::runtime_error(msg("[", name(), "] has no GPU kernel yet.")); \
  }

MLX_NO_GPU_KERNEL(Full)
MLX_NO_GPU_KERNEL(Arange)
MLX_NO_GPU_KERNEL(AsType)
MLX_NO_GPU_KERNEL(Copy)
MLX_NO_GPU_KERNEL(Reshape)
MLX_NO_GPU_KERNEL(View)
MLX_NO_GPU_KERNEL(Concatenate)
MLX_NO_GPU_KERNEL(SliceUpdate)
MLX_NO_GPU_KERNEL(Unary)
MLX_NO_GPU_KERNEL(Binary)
MLX_NO_GPU_KERNEL(DivMod)
MLX_NO_GPU_KERNEL(Select)
MLX_NO_GPU_KERNEL(Reduce)
MLX_NO_GPU_KERNEL(ArgReduce)
MLX_NO_GPU_KERNEL(Scan)
MLX_NO_GPU_KERNEL(Softmax)
MLX_NO_GPU_KERNEL(LogSumExp)
MLX_NO_GPU_KERNEL(Gather)
MLX_NO_GPU_KERNEL(GatherAxis)
MLX_NO_GPU_KERNEL(Scatter)
MLX_NO_GPU_KERNEL(ScatterAxis)
MLX_NO_GPU_KERNEL(SortAlongAxis)
MLX_NO_GPU_KERNEL(Matmul)
MLX_NO_GPU_KERNEL(AddMM)
MLX_NO_GPU_KERNEL(Inverse)
MLX_NO_GPU_KERNEL(Cholesky)
MLX_NO_GPU_KERNEL(Solve)
MLX_NO_GPU_KERNEL(QRF)
MLX_NO_GPU_KERNEL(SVD)
MLX_NO_GPU_KERNEL(Eigh)
MLX_NO_GPU_KERNEL(Eig)
MLX_NO_GPU_KERNEL(LUF)
MLX_NO_GPU_KERNEL(RandomBits)
MLX_NO_GPU_KERNEL(fast::RMSNorm)
MLX_NO_GPU_KERNEL(fast::LayerNorm)
MLX_NO_GPU_KERNEL(fast::RoPE)
MLX_NO_GPU_KERNEL(fast::ScaledDotProductAttention)
MLX_NO_GPU_KERNEL(fast::RMSNormVJP)
MLX_NO_GPU_KERNEL(fast::LayerNormVJP)
MLX_NO_GPU_KERNEL(fast::ScaledDotProductAttentionVJP)
MLX_NO_GPU_KERNEL(Convolution)
MLX_NO_GPU_KERNEL(FFT)
MLX_NO_GPU_KERNEL(QuantizedMatmul)

}  // namespace mlx::core
