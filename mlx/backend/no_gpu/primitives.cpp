// Without a GPU backend, a primitive on a GPU stream is a clear error (the stream itself can
// only exist when a GPU is available, so this is reached only by hand-made primitives).
#include <stdexcept>

#include "mlx/primitives/with_kernels.h"
#include "mlx/utils.h"

namespace mlx::core {

#define MLX_NO_GPU(P)                                                                     \
  void P::eval_gpu(const std::vector<array>&, Outputs&) {                                 \
    throw std::runtime_error(msg("[", name(), "] No GPU backend: this build has none.")); \
  }
MLX_PRIMITIVES_WITH_KERNELS(MLX_NO_GPU)
#undef MLX_NO_GPU

}  // namespace mlx::core
