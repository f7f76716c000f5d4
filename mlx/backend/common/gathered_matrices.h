// Which matrices a gathered product (gather_mm, gather_qmm) multiplies: the index arrays read
// as flat matrix numbers, checked, and the products grouped by their right-hand matrix so a
// backend can run one product per group.
#pragma once

#include <cstdint>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {

// The evaluated integer index array `idx` (any integer dtype and layout) as int64 values in
// row-major order; values outside [0, count) throw std::out_of_range naming `op`.
std::vector<int64_t> matrix_indices(const array& idx, int64_t count, const char* op);

// Positions 0..n-1 ordered by rhs[position] (stable), with the start of each run of equal rhs
// in `starts` (one past the last run at the end).
struct ProductGroups {
  std::vector<int64_t> order;
  std::vector<int64_t> starts;
};
ProductGroups group_by_rhs(const std::vector<int64_t>& rhs, int64_t count);

}  // namespace mlx::core
