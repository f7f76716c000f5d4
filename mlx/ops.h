// All op families of mlx::core.
#pragma once

#include "mlx/ops/composites.h"
#include "mlx/ops/conv.h"
#include "mlx/ops/creation.h"
#include "mlx/ops/einsum.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/fft.h"
#include "mlx/ops/graph.h"
#include "mlx/ops/grouped_matmul.h"
#include "mlx/ops/hadamard.h"
#include "mlx/ops/indexing.h"
#include "mlx/ops/linalg.h"
#include "mlx/ops/quantized.h"
#include "mlx/ops/reduction.h"
#include "mlx/ops/search.h"
#include "mlx/ops/shape.h"
