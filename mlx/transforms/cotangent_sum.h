// Summing the cotangents that reach one array from several uses. Slicing's derivative is the
// cotangent written into zeros (slice_update); a sum of those for pieces that do not overlap,
// such as q, k and v sliced from one projection, is the pieces written one after another into
// one zero-filled array, not a zero-filled array per piece and an add per piece.
#pragma once

#include "mlx/array.h"

namespace mlx::core::detail {

// a + b for two cotangents of one array (same shape and dtype).
array add_cotangents(const array& a, const array& b);

}  // namespace mlx::core::detail
