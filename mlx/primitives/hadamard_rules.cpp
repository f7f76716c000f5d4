// Transform rules of Hadamard: the transform is linear, so the tangent is transformed like
// the input and the cotangent by the transposed matrix; vmap moves the batch axis first.
#include "mlx/primitives/hadamard.h"
#include "mlx/transforms/rule_utils.h"

namespace mlx::core {

std::vector<array> Hadamard::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                 const std::vector<int>&) {
  return {hadamard_node(tangents[0], scale_, transpose_, stream())};
}

std::vector<array> Hadamard::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                 const std::vector<int>&, const std::vector<array>&) {
  return {hadamard_node(cotangents[0], scale_, !transpose_, stream())};
}

std::pair<std::vector<array>, std::vector<int>> Hadamard::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  if (axes[0] >= 0 && axes[0] == inputs[0].ndim() - 1) {
    // The mapped axis sits where the transformed one should: move it to the front.
    array x = detail::batch_first(inputs[0], axes[0]);
    return {{hadamard_node(x, scale_, transpose_, stream())}, {0}};
  }
  return {{hadamard_node(inputs[0], scale_, transpose_, stream())}, {axes[0]}};
}

}  // namespace mlx::core
