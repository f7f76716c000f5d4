// Transform rules of a fused region: those of its unfused ops (Compiled::expand), so the
// derivatives are ordinary graphs that a surrounding compile fuses again.
#include "mlx/primitives/compiled.h"
#include "mlx/transforms/rule_utils.h"

namespace mlx::core {

std::vector<array> Compiled::vjp(const std::vector<array>& primals,
                                 const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums, const std::vector<array>&) {
  return detail::vjp_by_expansion([this](const auto& x) { return expand(x); }, primals, cotangents,
                                  argnums);
}

std::vector<array> Compiled::jvp(const std::vector<array>& primals,
                                 const std::vector<array>& tangents,
                                 const std::vector<int>& argnums) {
  return detail::jvp_by_expansion([this](const auto& x) { return expand(x); }, primals, tangents,
                                  argnums);
}

std::pair<std::vector<array>, std::vector<int>> Compiled::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  return detail::vmap_by_expansion([this](const auto& x) { return expand(x); }, inputs, axes);
}

}  // namespace mlx::core
