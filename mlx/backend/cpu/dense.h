// Kernel inputs as plain row-major memory.
#pragma once

#include <algorithm>
#include <optional>

#include "mlx/array.h"
#include "mlx/backend/cpu/copy.h"

namespace mlx::core::cpu {

// `x` as row-contiguous memory of dtype `dt`: the array itself when it already is, else a
// converted copy that `holder` keeps alive.
inline const array& row_contiguous(const array& x, Dtype dt, std::optional<array>& holder) {
  if (x.dtype() == dt && x.flags().row_contiguous) {
    return x;
  }
  holder.emplace(allocator::malloc(std::max<size_t>(x.size(), 1) * dt.size), x.shape(), dt);
  copy_strided(x, x.strides(), 0, *holder, holder->strides(), 0, x.shape());
  return *holder;
}

}  // namespace mlx::core::cpu
