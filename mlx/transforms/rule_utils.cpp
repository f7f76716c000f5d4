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

}  // namespace mlx::core::detail
