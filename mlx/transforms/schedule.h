// compile's scheduling pass. eval walks a graph depth first from its outputs, inputs in
// argument order. For a training step that order is poor: the first gradient it reaches needs
// the backward chain down to the first layer, and every layer's weight gradient (x^T dy) waits
// until then, holding that layer's input and output gradient. The pass orders the steps by a
// greedy list schedule instead (of the steps ready, the one that frees the most memory net of
// what it allocates) and makes eval follow it: where eval's walk would run a step early, the
// step gets a Depends node on the steps the schedule runs before it. Exported functions saved
// with optimize_memory are chained the same way when they are loaded.
#pragma once

#include <vector>

#include "mlx/array.h"
#include "mlx/transforms/compile_program.h"

namespace mlx::core::detail {

// The greedy schedule: a topological order of program.steps (step indices).
std::vector<int> memory_schedule(const Program& program);

// `program` with the Depends nodes, few, that make eval run its steps in `order` (a
// topological order); `types` gives the shapes and dtypes of its values.
Program chain_in_order(const Program& program, const std::vector<int>& order,
                       const ValueTypes& types);

// `program` for `inputs`, its steps chained in the greedy order (unchanged where its steps
// run on several streams).
Program schedule_for_memory(const Program& program, const std::vector<array>& inputs);

}  // namespace mlx::core::detail
