// Ops that shape the graph rather than compute.
#pragma once

#include "mlx/array.h"
#include "mlx/device.h"

namespace mlx::core {

// The same values, with a zero derivative.
array stop_gradient(const array& a, StreamOrDevice s = {});

// `inputs` unchanged, but only computed after `dependencies`.
std::vector<array> depends(const std::vector<array>& inputs,
                           const std::vector<array>& dependencies);

}  // namespace mlx::core
