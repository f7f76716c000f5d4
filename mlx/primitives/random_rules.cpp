// Transform rules of RandomBits: integer output, so zero derivatives; vmap maps over a batch of
// keys, which the primitive takes directly.
#include "mlx/ops.h"
#include "mlx/primitives/random.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

Dtype bits_dtype(int width) {
  return width == 1 ? uint8 : width == 2 ? uint16 : width == 4 ? uint32 : uint64;
}

}  // namespace

std::vector<array> RandomBits::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                   const std::vector<int>&) {
  return {zeros(output_shapes(primals)[0], bits_dtype(width_), stream())};
}

std::vector<array> RandomBits::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> RandomBits::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  // Keys are (..., 2) with the words last; moving the batch axis to the front keeps every other
  // axis in order, so the words stay last and each batch element draws from its own key.
  const array& keys = inputs[0];
  int b = axes[0];
  if (keys.ndim() < 2 || keys.shape(b == keys.ndim() - 1 ? -2 : -1) != 2) {
    throw std::invalid_argument(
        msg("[RandomBits::vmap] Each mapped key must have a last axis of size 2 (its two words); "
            "got keys of shape ",
            keys.shape(), " mapped along axis ", b, "."));
  }
  array k = b == 0 ? keys : moveaxis(keys, b, 0, stream());
  Shape shape(k.shape().begin(), k.shape().end() - 1);
  shape.insert(shape.end(), shape_.begin(), shape_.end());
  return {{array(std::move(shape), bits_dtype(width_),
                 std::make_shared<RandomBits>(stream(), shape_, width_), {k})},
          {0}};
}

}  // namespace mlx::core
