// Offsets of gathered or scattered slices, computed from index arrays on the host.
#pragma once

#include "mlx/array.h"

namespace mlx::core::cpu {

// off[p] += wrapped(indices[p]) * stride, p running over indices.shape() in row-major order.
// Throws std::out_of_range (naming op and axis) when a slice of `slice` elements starting at an
// index does not fit in an axis of size n.
void add_index_offsets(const array& indices, int64_t n, int64_t slice, int64_t stride,
                       const char* op, int axis, int64_t* off);

}  // namespace mlx::core::cpu
