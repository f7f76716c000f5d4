// Searching sorted data and set operations with static output shapes, built from other ops.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// For each element of `values`, the index (uint32) at which it would be inserted into the
// ascending 1-D `sorted_sequence` to keep it sorted: with side "left" the number of elements
// strictly less than the value, with "right" the number less than or equal to it. A binary
// search of ceil(log2(n + 1)) steps; the result has the shape of `values`.
array searchsorted(const array& sorted_sequence, const array& values,
                   const std::string& side = "left", StreamOrDevice s = {});

// The `size` smallest distinct elements of the flattened `a`, ascending (NaNs count as one
// value), padded with `fill_value` (default: the smallest element) when there are fewer.
// The outputs, in this order and each only when asked for: the values; `index` (uint32, the
// flat position of each value's first occurrence, 0 in the padding); `inverse` (uint32, the
// shape of `a`: the entry of each element, clamped to size - 1 when truncated); `counts`
// (uint32, 0 in the padding). Output shapes never depend on the data, so nothing is evaluated.
std::vector<array> unique(const array& a, int size, bool return_index = false,
                          bool return_inverse = false, bool return_counts = false,
                          const std::optional<array>& fill_value = std::nullopt,
                          StreamOrDevice s = {});

}  // namespace mlx::core
