// MLX's header name for the save/load API.
#pragma once

#include "mlx/io/io.h"
