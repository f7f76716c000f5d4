// compile's fusion pass: connected elementwise steps of one shape and stream become one
// Compiled step (a fused region, primitives/compiled.h), so a chain runs as one kernel and
// its intermediates never reach memory. Steps left without consumers (broadcast views the
// regions absorbed) are removed.
#pragma once

#include "mlx/transforms/compile_program.h"

namespace mlx::core::detail {

// `program` with its elementwise regions fused. MLX_COMPILE_DEBUG=1 prints every region and
// its code to stderr.
Program fuse_elementwise(const Program& program, bool shapeless);

// Fusion on (the default) or off (MLX_DISABLE_FUSION=1); compile still captures and
// simplifies when off.
void set_fusion_enabled(bool enabled);
bool fusion_enabled();

}  // namespace mlx::core::detail
