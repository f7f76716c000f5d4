// Counter-based random numbers with explicit keys (mlx::core::random).
#pragma once

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core::random {}  // namespace mlx::core::random
