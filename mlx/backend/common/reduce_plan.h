// The layout of a reduction, shared by every backend: kept and reduced dimensions, sorted by
// decreasing input stride and merged where contiguous, with negative strides walked forwards.
#pragma once

#include <vector>

#include "mlx/array.h"

namespace mlx::core {

struct ReducePlan {
  Shape kshape;  // kept dimensions, outer to inner
  Strides kin, kout;
  Shape rshape;  // reduced dimensions, outer to inner
  Strides rin;
  int64_t in_offset = 0;  // where iteration starts once negative strides are flipped
  int64_t out_offset = 0;
};

ReducePlan make_reduce_plan(const array& in, const array& out, const std::vector<int>& axes);

inline int64_t reduce_plan_size(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) {
    n *= d;
  }
  return n;
}

}  // namespace mlx::core
