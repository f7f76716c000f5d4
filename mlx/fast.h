// Fused composites with dedicated kernels (mlx::core::fast).
#pragma once

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core::fast {}  // namespace mlx::core::fast
