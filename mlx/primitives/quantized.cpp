#include "mlx/primitives/quantized.h"

namespace mlx::core {

std::vector<Shape> QuantizedMatmul::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  const array& w = inputs[1];
  shape.back() = transpose_ ? w.shape(-2) : w.shape(-1) * 32 / bits_;
  return {shape};
}

}  // namespace mlx::core
