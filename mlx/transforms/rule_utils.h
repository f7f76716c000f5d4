// Helpers for writing vmap rules.
#pragma once

#include <vector>

#include "mlx/array.h"

namespace mlx::core::detail {

// `x` with its mapped axis moved to the front; unmapped (axis -1) values are returned as is.
array batch_first(const array& x, int axis);

// Inputs of an elementwise rule lined up for broadcasting: mapped axes moved to the front,
// and every input given rank 1 + (largest unbatched rank), with size-1 axes inserted after
// the batch axis of mapped inputs and in front of unmapped ones. The batch axis of the
// result is 0.
std::vector<array> align_batch(const std::vector<array>& inputs, const std::vector<int>& axes);

}  // namespace mlx::core::detail
