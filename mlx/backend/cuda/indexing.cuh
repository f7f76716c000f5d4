// What the gather and scatter kernels share: index arrays of any integer dtype read through one
// parameter block, NumPy's wrapping of negative indices, and the report of a bad index.
#pragma once

#include <vector>

#include "mlx/backend/cuda/index_errors.h"
#include "mlx/backend/cuda/kernel_utils.cuh"

namespace mlx::core::cu {

// The integer dtypes an index array may have, as kernels switch on them.
enum class IndexType : int { u8, u16, u32, u64, i8, i16, i32, i64 };
IndexType index_type(Dtype dt, const char* op);

// Reads element `i` of an index array of type `t`, widened to int64 (uint64 values beyond
// int64 become negative and fail the bounds check, as on the host).
__device__ __forceinline__ int64_t load_index(const void* p, IndexType t, int64_t i) {
  switch (t) {
    case IndexType::u8:
      return static_cast<const uint8_t*>(p)[i];
    case IndexType::u16:
      return static_cast<const uint16_t*>(p)[i];
    case IndexType::u32:
      return static_cast<const uint32_t*>(p)[i];
    case IndexType::u64:
      return static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]);
    case IndexType::i8:
      return static_cast<const int8_t*>(p)[i];
    case IndexType::i16:
      return static_cast<const int16_t*>(p)[i];
    case IndexType::i32:
      return static_cast<const int32_t*>(p)[i];
    default:
      return static_cast<const int64_t*>(p)[i];
  }
}

// Wraps a raw index into [0, size - slice] or reports it (to `err`, unless null) and returns -1.
// Signed types wrap negatives; an unsigned uint64 beyond int64 is negative here and fails.
__device__ __forceinline__ int64_t checked_index(int64_t raw, IndexType type, int64_t size,
                                                 int64_t slice, int axis, const char* op,
                                                 IndexErrorRecord* err) {
  const bool is_signed = type >= IndexType::i8;
  int64_t v = (is_signed && raw < 0) ? raw + size : raw;
  int64_t limit = size - (slice > 1 ? slice : 1) + 1;
  if (v >= 0 && v < limit) {
    return v;
  }
  if (err != nullptr && atomicCAS(&err->flag, 0, 1) == 0) {
    err->axis = axis;
    err->size = size;
    err->slice = slice;
    err->index = raw;
    err->is_uint64 = type == IndexType::u64;
    err->op = op;
    __threadfence_system();
  }
  return -1;
}

// Up to kMaxDims index arrays over one (collapsed) index shape, and the axes they index.
struct IndexArrays {
  int count;
  int ndim;
  int32_t shape[kMaxDims];
  const void* data[kMaxDims];
  IndexType type[kMaxDims];
  int64_t strides[kMaxDims][kMaxDims];
  int axis[kMaxDims];
  int64_t axis_size[kMaxDims];
  int64_t axis_stride[kMaxDims];  // in the array the indices address (source or output)
  int64_t slice[kMaxDims];        // slice size along the indexed axis
};

// Packs `indices` (broadcast to one shape) for the axes `axes` of an array of `shape` addressed
// with `strides`, with slices of `slice_sizes`.
IndexArrays make_index_arrays(const std::vector<array>& indices, const std::vector<int>& axes,
                              const Shape& shape, const Strides& strides, const Shape& slice_sizes,
                              const char* op);

// Reports the first bad index among `count` index positions, on the current stream (for gathers
// and scatters that move no elements but must still check their indices).
void check_indices(const IndexArrays& ix, int64_t count, const char* op, IndexErrorRecord* err);

// Sets `off` to the element offset addressed by index position p (row-major over the index
// shape) and returns true, or reports a bad index and returns false. The offset may be negative:
// a view with negative strides addresses elements before its first one.
__device__ __forceinline__ bool index_offset(const IndexArrays& ix, int64_t p, const char* op,
                                             IndexErrorRecord* err, int64_t& off) {
  int64_t coord[kMaxDims];
  for (int d = ix.ndim - 1; d >= 0; --d) {
    int64_t q = p / ix.shape[d];
    coord[d] = p - q * ix.shape[d];
    p = q;
  }
  off = 0;
  bool bad = false;
  for (int k = 0; k < ix.count; ++k) {
    int64_t e = 0;
    for (int d = 0; d < ix.ndim; ++d) {
      e += coord[d] * ix.strides[k][d];
    }
    int64_t v = checked_index(load_index(ix.data[k], ix.type[k], e), ix.type[k], ix.axis_size[k],
                              ix.slice[k], ix.axis[k], op, err);
    bad |= v < 0;
    off += v * ix.axis_stride[k];
  }
  return !bad;
}

// A slice box (shape and strides of the array it lives in) for offsets within one slice.
struct SliceBox {
  int ndim;
  int32_t shape[kMaxDims];
  int64_t strides[kMaxDims];
  int64_t size;
};
SliceBox make_slice_box(const Shape& slice_sizes, const Strides& strides, const char* op);

__device__ __forceinline__ int64_t box_offset(const SliceBox& b, int64_t s) {
  int64_t off = 0;
  for (int d = b.ndim - 1; d >= 0; --d) {
    int64_t q = s / b.shape[d];
    off += (s - q * b.shape[d]) * b.strides[d];
    s = q;
  }
  return off;
}

}  // namespace mlx::core::cu
