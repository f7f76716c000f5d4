// Indexing (gather / scatter / take) and sorting ops.
//
// Index arrays may have any integer dtype (not bool or floating point); several index arrays
// broadcast together. Negative indices count from the end of their axis. An index that is still
// out of range throws std::out_of_range when the result is evaluated.
#pragma once

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// Slices of `a` of size `slice_sizes` (one entry per dimension of `a`) starting at the
// positions given by `indices` along `axes` (and at 0 along the other axes). The output has
// shape broadcast(indices) + slice_sizes.
array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
             const Shape& slice_sizes, StreamOrDevice s = {});
inline array gather(const array& a, const array& indices, int axis, const Shape& slice_sizes,
                    StreamOrDevice s = {}) {
  return gather(a, std::vector<array>{indices}, std::vector<int>{axis}, slice_sizes, s);
}

// Writes `updates` (shape broadcast(indices) + update slice shape, where the slice has one
// dimension per dimension of `a`) into a copy of `a` at the slices starting at `indices`
// along `axes`. With duplicate indices, scatter keeps the last update in index order; the
// reducing variants combine every update.
array scatter(const array& a, const std::vector<array>& indices, const array& updates,
              const std::vector<int>& axes, StreamOrDevice s = {});
array scatter_add(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s = {});
array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, StreamOrDevice s = {});
array scatter_max(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s = {});
array scatter_min(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s = {});
#define MLX_SCATTER_SINGLE_AXIS(NAME)                                                     \
  inline array NAME(const array& a, const array& indices, const array& updates, int axis, \
                    StreamOrDevice s = {}) {                                              \
    return NAME(a, std::vector<array>{indices}, updates, std::vector<int>{axis}, s);      \
  }
MLX_SCATTER_SINGLE_AXIS(scatter)
MLX_SCATTER_SINGLE_AXIS(scatter_add)
MLX_SCATTER_SINGLE_AXIS(scatter_prod)
MLX_SCATTER_SINGLE_AXIS(scatter_max)
MLX_SCATTER_SINGLE_AXIS(scatter_min)
#undef MLX_SCATTER_SINGLE_AXIS

// Slices of `a` at `indices` along `axis`: shape a[:axis] + indices + a[axis+1:]. Taking a
// non-empty set of indices from an empty axis throws std::out_of_range at once.
array take(const array& a, const array& indices, int axis, StreamOrDevice s = {});
// Elements of the flattened `a`.
array take(const array& a, const array& indices, StreamOrDevice s = {});
// a[..., index, ...] with `axis` removed (a view; the index is checked immediately).
array take(const array& a, int index, int axis, StreamOrDevice s = {});
array take(const array& a, int index, StreamOrDevice s = {});

// out[..., j, ...] = a[..., indices[..., j, ...], ...] along `axis`; `indices` has a.ndim()
// dimensions and broadcasts with `a` on the other axes.
array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s = {});
// A copy of `a` with a[..., indices[..., j, ...], ...] = values[..., j, ...] along `axis`
// (values broadcast to the indices' shape; duplicates: the last one wins).
array put_along_axis(const array& a, const array& indices, const array& values, int axis,
                     StreamOrDevice s = {});
// Like put_along_axis but adds the values (duplicates accumulate).
array scatter_add_axis(const array& a, const array& indices, const array& values, int axis,
                       StreamOrDevice s = {});

// Sorting along an axis (default: the last; the overloads without axis flatten first). NaNs go
// to the end; complex numbers sort lexicographically. argsort is stable and returns uint32.
array sort(const array& a, StreamOrDevice s = {});
array sort(const array& a, int axis, StreamOrDevice s = {});
array argsort(const array& a, StreamOrDevice s = {});
array argsort(const array& a, int axis, StreamOrDevice s = {});

// The element at position kth (negative counts from the end) is where a sort would put it;
// smaller or equal elements come before it, larger or equal after.
array partition(const array& a, int kth, StreamOrDevice s = {});
array partition(const array& a, int kth, int axis, StreamOrDevice s = {});
array argpartition(const array& a, int kth, StreamOrDevice s = {});
array argpartition(const array& a, int kth, int axis, StreamOrDevice s = {});

// The k largest elements along `axis` (default: of the flattened array), in no particular order.
array topk(const array& a, int k, StreamOrDevice s = {});
array topk(const array& a, int k, int axis, StreamOrDevice s = {});

}  // namespace mlx::core
