// Graph walks shared by the function transforms.
#pragma once

#include <unordered_set>
#include <vector>

#include "mlx/array.h"

namespace mlx::core::detail {

using IdSet = std::unordered_set<uintptr_t>;

enum class Walk {
  differentiate,  // stop_gradient cuts the graph
  vectorize,      // follows every edge a vmap rule needs
  capture,        // follows every edge (compile)
};

// The nodes between `sources` and `outputs`: every node reachable from `outputs` (without
// recursion) that depends on one of `sources`, one entry per sibling group, inputs before
// their consumers. Sources themselves are not on the tape. Except when capturing, a custom
// function's own graph is not entered: its rules stand for it. A capture also keeps nodes with
// side effects (Primitive::has_side_effects) and what reads them.
std::vector<array> dependent_tape(const std::vector<array>& outputs, const IdSet& sources,
                                  Walk walk);

// A differentiation source standing for x: the same value under its own identity (x may be
// passed twice). An evaluated x that no enclosing transform traces is aliased: a leaf sharing
// its buffer and its event (the GPU may still be writing it), with nothing to evaluate (a Copy node
// per parameter cost each training step a node's host time on the GPU). Otherwise a Copy node,
// which keeps an enclosing transform's path back to x.
array trace_source(const array& x);

}  // namespace mlx::core::detail
