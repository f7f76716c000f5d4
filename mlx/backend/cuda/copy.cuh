// GPU copies with dtype conversion: the building block of astype, contiguous, concatenate,
// slice updates and reshapes that need a copy (the CUDA twin of backend/cpu/copy.h).
#pragma once

#include "mlx/array.h"

namespace mlx::core::cu {

// Copies `src` (read with src_strides from src_offset, shape `shape`) into dst's device memory
// at dst_offset with dst_strides, converting to dst's dtype. Offsets and strides count
// elements; dst must already have its device buffer.
void copy_strided(const array& src, const Strides& src_strides, int64_t src_offset, array& dst,
                  const Strides& dst_strides, int64_t dst_offset, const Shape& shape);

// Gives `out` a row-contiguous device buffer (reusing `in`'s when it can be donated) holding
// `in` converted to out.dtype().
void copy_to_contiguous(const array& in, array& out);

// `in` itself when it is dense (row-contiguous, no gaps), 16-byte aligned and of `dtype`, else a
// row-contiguous device copy converted to `dtype`: what kernels reading plain rows take.
array dense_copy(const array& in, Dtype dtype);
inline array dense_copy(const array& in) { return dense_copy(in, in.dtype()); }

}  // namespace mlx::core::cu
