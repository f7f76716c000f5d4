#include "mlx/transforms/rule_utils.h"

#include <algorithm>
#include <numeric>

#include "mlx/ops.h"

namespace mlx::core::detail {

array batch_first(const array& x, int axis) { return axis <= 0 ? x : moveaxis(x, axis, 0); }

std::vector<array> align_batch(const std::vector<array>& inputs, const std::vector<int>& axes) {
  int rank = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    rank = std::max(rank, inputs[i].ndim() - (axes[i] >= 0 ? 1 : 0));
  }
  std::vector<array> out;
  out.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    array x = batch_first(inputs[i], axes[i]);
    // Size-1 axes by expand_dims, not reshape: a shapeless trace replays it for any shape.
    std::vector<int> ones(rank + 1 - x.ndim());
    std::iota(ones.begin(), ones.end(), axes[i] >= 0 ? 1 : 0);
    out.push_back(ones.empty() ? x : expand_dims(x, ones));
  }
  return out;
}

std::vector<array> jvp_by_expansion(const ArrayFn& expand, const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  std::vector<array> all;
  for (const array& p : primals) {
    all.push_back(zeros_like(p));
  }
  for (size_t i = 0; i < argnums.size(); ++i) {
    all[argnums[i]] = tangents[i];
  }
  return mlx::core::jvp(expand, primals, all).second;
}

std::vector<array> vjp_by_expansion(const ArrayFn& expand, const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums) {
  return vjp(expand, primals, cotangents, argnums).second;
}

std::pair<std::vector<array>, std::vector<int>> vmap_by_expansion(const ArrayFn& expand,
                                                                  const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  std::vector<array> outs = mlx::core::vmap(expand, axes)(inputs);
  return {outs, std::vector<int>(outs.size(), 0)};
}

}  // namespace mlx::core::detail
