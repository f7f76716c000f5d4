#pragma once

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core {}  // namespace mlx::core
