#include "mlx/primitives/grouped_matmul.h"

namespace mlx::core {

std::vector<Shape> GatherMM::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[2].shape();
  shape.push_back(inputs[0].shape(-2));
  shape.push_back(inputs[1].shape(-1));
  return {shape};
}

std::vector<Shape> SegmentedMM::output_shapes(const std::vector<array>& inputs) {
  Shape shape(inputs[2].shape().begin(), inputs[2].shape().end() - 1);
  shape.push_back(inputs[0].shape(0));
  shape.push_back(inputs[1].shape(1));
  return {shape};
}

}  // namespace mlx::core
