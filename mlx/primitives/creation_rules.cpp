// Transform rules of the creation primitives. Full's input is the fill value already broadcast
// to the output's shape and cast to its dtype, so Full is the identity on values; Arange has
// no inputs and so is never reached by a transform.
#include "mlx/ops.h"
#include "mlx/primitives/creation.h"

namespace mlx::core {

std::vector<array> Full::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  return {tangents[0]};
}

std::vector<array> Full::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                             const std::vector<int>&, const std::vector<array>&) {
  return {cotangents[0]};
}

std::pair<std::vector<array>, std::vector<int>> Full::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  const array& x = inputs[0];
  return {{full(x.shape(), x, x.dtype(), stream())}, axes};
}

}  // namespace mlx::core
