// MLX's header name for the export API.
#pragma once

#include "mlx/export/export.h"
