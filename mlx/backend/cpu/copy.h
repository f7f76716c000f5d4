// Copies with dtype conversion: the CPU building block for astype, contiguous, concatenate
// and slice updates.
#pragma once

#include "mlx/array.h"

namespace mlx::core::cpu {

// dst[i] = convert(src[i]) for n contiguous elements.
void convert_contiguous(const void* src, Dtype src_dtype, void* dst, Dtype dst_dtype, size_t n);

// Allocates `out` row-contiguous (reusing `in`'s buffer when it can be donated) and copies
// `in` into it, converting to out.dtype().
void copy_to_contiguous(const array& in, array& out);

// Copies `src` (broadcast to `shape`, read with src_strides from src_offset) into dst's memory
// at dst_offset with dst_strides, converting dtype. Offsets and strides count elements.
void copy_strided(const array& src, const Strides& src_strides, int64_t src_offset, array& dst,
                  const Strides& dst_strides, int64_t dst_offset, const Shape& shape);

}  // namespace mlx::core::cpu
