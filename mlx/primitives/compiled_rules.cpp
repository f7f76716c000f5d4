// Transform rules of a fused region: those of its unfused ops (Compiled::expand), so the
// derivatives are ordinary graphs that a surrounding compile fuses again.
#include "mlx/ops/creation.h"
#include "mlx/primitives/compiled.h"
#include "mlx/transforms/transforms.h"

namespace mlx::core {

std::vector<array> Compiled::vjp(const std::vector<array>& primals,
                                 const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums, const std::vector<array>&) {
  auto fun = [this](const std::vector<array>& x) { return expand(x); };
  return detail::vjp(fun, primals, cotangents, argnums).second;
}

std::vector<array> Compiled::jvp(const std::vector<array>& primals,
                                 const std::vector<array>& tangents,
                                 const std::vector<int>& argnums) {
  std::vector<array> all;
  for (auto& p : primals) {
    all.push_back(zeros_like(p));
  }
  for (size_t i = 0; i < argnums.size(); ++i) {
    all[argnums[i]] = tangents[i];
  }
  auto fun = [this](const std::vector<array>& x) { return expand(x); };
  return mlx::core::jvp(fun, primals, all).second;
}

std::pair<std::vector<array>, std::vector<int>> Compiled::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  auto fun = [this](const std::vector<array>& x) { return expand(x); };
  std::vector<array> outs = mlx::core::vmap(fun, axes)(inputs);
  return {outs, std::vector<int>(outs.size(), 0)};
}

}  // namespace mlx::core
