// Ops that shape the graph rather than compute.
#pragma once

#include "mlx/array.h"
#include "mlx/runtime/device.h"

namespace mlx::core {

// The same values, with a zero derivative.
array stop_gradient(const array& a, StreamOrDevice s = {});

// `inputs` unchanged, but only computed after `dependencies`.
std::vector<array> depends(const std::vector<array>& inputs,
                           const std::vector<array>& dependencies);

// Input 0 broadcast against all the inputs, recorded so that a shapeless compile can replay it
// on new shapes (plain broadcast_to outside shapeless traces).
array dynamic_broadcast(const std::vector<array>& inputs, StreamOrDevice s = {});

// `x` summed to the shape of `like` (whose shape broadcasts to x's), over the axes broadcasting
// added or stretched; recorded so that a shapeless compile finds those axes on new shapes.
array unbroadcast(const array& x, const array& like, StreamOrDevice s = {});

// The element count of `a` over `axes` (1 / count when `inverted`) as a scalar of `dtype`.
array number_of_elements(const array& a, const std::vector<int>& axes, bool inverted, Dtype dtype,
                         StreamOrDevice s = {});

}  // namespace mlx::core
