// The Walsh-Hadamard transform along the last axis.
#pragma once

#include <optional>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// y = (H_n @ x) * scale along the last axis, n = m 2^k with m in 1, 12, 20, 28 (H_n as MLX
// defines it: the Sylvester matrix for m = 1); scale defaults to 1 / sqrt(n), which makes the
// transform orthonormal. Floating inputs keep their dtype, integers and bools give float32.
array hadamard_transform(const array& a, std::optional<float> scale = std::nullopt,
                         StreamOrDevice s = {});

}  // namespace mlx::core
