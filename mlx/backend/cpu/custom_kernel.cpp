// A custom CUDA kernel has no host version: the op refuses CPU streams, so this is reached only
// through a hand-made node.
#include "mlx/primitives/custom_kernel.h"

#include <stdexcept>

#include "mlx/utils.h"

namespace mlx::core::fast {

void CustomKernel::eval_cpu(const std::vector<array>&, std::vector<array>&) {
  throw std::runtime_error(
      msg("[cuda_kernel] The custom CUDA kernel '", spec_.name, "' runs on GPU streams only."));
}

}  // namespace mlx::core::fast
