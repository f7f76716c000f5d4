#include "mlx/primitives/random.h"

namespace mlx::core {

bool RandomBits::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const RandomBits*>(&other);
  return o && o->shape_ == shape_ && o->width_ == width_;
}

std::vector<Shape> RandomBits::output_shapes(const std::vector<array>& inputs) {
  Shape out(inputs[0].shape().begin(), inputs[0].shape().end() - 1);
  out.insert(out.end(), shape_.begin(), shape_.end());
  return {out};
}

}  // namespace mlx::core
