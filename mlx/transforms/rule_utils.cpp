#include "mlx/transforms/rule_utils.h"

#include <algorithm>

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
    Shape shape = x.shape();
    if (axes[i] >= 0) {
      shape.insert(shape.begin() + 1, rank + 1 - x.ndim(), 1);
    } else {
      shape.insert(shape.begin(), rank + 1 - x.ndim(), 1);
    }
    out.push_back(shape == x.shape() ? x : reshape(x, shape));
  }
  return out;
}

}  // namespace mlx::core::detail
