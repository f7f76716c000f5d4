// Mixed-precision weight gradients written in float32 by the product that computes them.
#pragma once

#include <optional>

#include "mlx/array.h"

namespace mlx::core::detail {

// `cotangent` (float16 / bfloat16) is about to be cast to float32 by AsType's vjp: the
// gradient of float32 weights that the forward pass cast to 16 bits. When it is, through
// Transpose / Reshape views and sums (a weight broadcast over a batch), an output of a product
// of its dtype (Matmul, MatmulColumnSums) and every node on the way is unevaluated and read by
// nothing but the next one (the caller holds the only handle of `cotangent`), that product is
// made to store that output in float32 and the steps above it retyped with it, in place: no
// AsType pass, no rounding to 16 bits. Returns `cotangent`, now float32, or nothing when the
// graph is not of that form.
//
// Safe because nothing else can reach those nodes: a consumer of any of them, a handle held
// by the user, a tape or another cotangent adds a reference, and then nothing is changed.
// The product's other outputs (a MatmulColumnSums' bias gradient) keep their dtype.
std::optional<array> widen_product_cotangent(const array& cotangent);

}  // namespace mlx::core::detail
