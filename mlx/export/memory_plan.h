// Memory planning for exported programs (Module.export(..., optimize_memory=True)).
//
// Evaluation frees an intermediate as soon as its last consumer ran and reuses freed blocks
// through the buffer cache, so the peak is set by the order the steps run in. eval visits a
// node's inputs in argument order; for `big(x) * small(reduce(huge(x)))` that keeps big(x)
// alive while huge(x) is computed. The planner orders the steps like Sethi-Ullman register
// allocation: at each step, the input whose subgraph needs the most memory beyond what it
// leaves behind is computed first (export also tries compile's greedy memory schedule,
// transforms/schedule.h). The imported function then gets Depends nodes that make eval run
// the steps in that order, so the cache reuses the blocks the plan frees.
#pragma once

#include <cstdint>
#include <vector>

#include "mlx/transforms/compile_program.h"
#include "mlx/transforms/transforms.h"

namespace mlx::core::detail {

// A topological order of program.steps (step indices).
std::vector<int> plan_memory_order(const Program& program);

// The peak of live intermediate bytes (step outputs, freed after their last use; program
// outputs live to the end) when the steps run in `order`: simulate_memory without inputs.
uint64_t planned_peak_bytes(const Program& program, const std::vector<int>& order);

// What running the program on `inputs` in `order` allocates, as eval and the CPU kernels do it:
// views share their input's buffer, elementwise kernels take over an input buffer that dies
// with them, blocks are rounded like the caching allocator's; inputs and constants are held
// throughout and outputs to the end. Kernels' internal scratch is not modelled.
// With `peak`, also where the peak falls: its position in `order` and the steps whose output
// buffers are alive there, largest first.
struct PeakSite {
  int position = -1;
  std::vector<int> live_steps;
};
MemoryPlan simulate_memory(const Program& program, const std::vector<array>& inputs,
                           const std::vector<int>& order, PeakSite* peak = nullptr);

// Bytes of an array of `shape` and `dtype` (before the allocator rounds them).
uint64_t nbytes_of(const Shape& shape, Dtype dtype);

// Whether the step's outputs are views of its first input (layout changes, Depends).
bool is_view_step(const Primitive& primitive);

// The order eval's depth-first walk would use (inputs in argument order), for comparison.
std::vector<int> eval_order(const Program& program);

// The steps the outputs need, in eval_order.
std::vector<int> needed_steps(const Program& program);

}  // namespace mlx::core::detail
