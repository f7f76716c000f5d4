// Validation of imported steps (see validate.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mlx/primitives/primitive.h"

namespace mlx::core::detail {

using StepFail = std::function<void(const std::string&)>;  // throws

// Throws through `fail` when the step's parameters, inputs (shapes and dtypes only) or
// recorded outputs could make its kernel read or write outside a buffer.
void check_step(Primitive& prim, const std::vector<array>& inputs, const std::vector<Shape>& shapes,
                const std::vector<Dtype>& dtypes, const StepFail& fail);

// Whether the kernel reads the inputs after the first as row-contiguous (scatters' indices
// and updates); the importer passes them through a Copy.
bool needs_row_contiguous_inputs(Primitive& prim);

}  // namespace mlx::core::detail
