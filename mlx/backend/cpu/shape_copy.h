// Bulk strided copies for the layout primitives.
#pragma once

#include "mlx/array.h"

namespace mlx::core::cpu {

// cpu::copy_strided with two extra fast paths: a block that is one long run is split across
// threads, and a transposing copy (source contiguous along another axis than the destination)
// goes through cache-sized tiles.
void copy_block(const array& src, const Strides& src_strides, int64_t src_offset, array& dst,
                const Strides& dst_strides, int64_t dst_offset, const Shape& shape);

}  // namespace mlx::core::cpu
