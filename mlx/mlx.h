// Umbrella header of the C++ API (namespace mlx::core).
#pragma once

#include "mlx/array.h"
#include "mlx/distributed/distributed.h"
#include "mlx/dtype.h"
#include "mlx/export/export.h"
#include "mlx/fast.h"
#include "mlx/io/io.h"
#include "mlx/linalg.h"
#include "mlx/memory/memory.h"
#include "mlx/ops.h"
#include "mlx/random.h"
#include "mlx/runtime/device.h"
#include "mlx/runtime/eval.h"
#include "mlx/runtime/stream.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"
