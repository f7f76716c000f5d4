// compile's rematerialization pass. A training step keeps each layer's activations alive from
// the forward pass, which reads them first, to the backward pass, which reads them again; the
// memory peak falls between. Some of them are cheap to compute again from values the backward
// keeps anyway: GELU(h) from h, which GELU's own gradient reads; an attention output's
// transposed copy from the output, which attention's gradient reads. For those, the reads
// after the peak get a copy of the step that runs just before them (a Depends node on the
// reader's latest input holds it back), and the original dies after the forward's reads. A
// copy is kept only where the simulated peak (export/memory_plan.h) goes down, so a program
// without such a span is left as it is.
#pragma once

#include <cstdint>
#include <vector>

#include "mlx/array.h"
#include "mlx/transforms/compile_program.h"

namespace mlx::core::detail {

// `program` for `inputs`, with the steps worth recomputing recomputed where they are read
// after the peak; `peak_bytes`, where given, gets the result's simulated peak.
Program rematerialize(const Program& program, const std::vector<array>& inputs,
                      uint64_t* peak_bytes = nullptr);

}  // namespace mlx::core::detail
