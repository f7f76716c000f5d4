#include "mlx/primitives/hadamard.h"

namespace mlx::core {

array hadamard_node(const array& x, double scale, bool transpose, Stream stream) {
  return array(x.shape(), x.dtype(), std::make_shared<Hadamard>(stream, scale, transpose), {x});
}

}  // namespace mlx::core
