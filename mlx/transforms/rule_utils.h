// Helpers for writing transform rules.
#pragma once

#include <vector>

#include "mlx/array.h"
#include "mlx/transforms/transforms.h"

namespace mlx::core::detail {

// `x` with its mapped axis moved to the front; unmapped (axis -1) values are returned as is.
array batch_first(const array& x, int axis);

// Inputs of an elementwise rule lined up for broadcasting: mapped axes moved to the front,
// and every input given rank 1 + (largest unbatched rank), with size-1 axes inserted after
// the batch axis of mapped inputs and in front of unmapped ones. The batch axis of the
// result is 0.
std::vector<array> align_batch(const std::vector<array>& inputs, const std::vector<int>& axes);

// The rules of a primitive that stands for a graph of ordinary ops (`expand`: its inputs to
// its outputs, as those ops): the ops' own rules, so its derivatives are ordinary graphs.
std::vector<array> jvp_by_expansion(const ArrayFn& expand, const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums);
std::vector<array> vjp_by_expansion(const ArrayFn& expand, const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums);
// Every output batched along axis 0.
std::pair<std::vector<array>, std::vector<int>> vmap_by_expansion(const ArrayFn& expand,
                                                                  const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes);

}  // namespace mlx::core::detail
