// Shape and layout ops. Views (reshape, transpose, slice, broadcast) copy nothing.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s = {});
std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s = {});

// One dimension may be -1 (inferred).
array reshape(const array& a, Shape shape, StreamOrDevice s = {});
array flatten(const array& a, int start_axis, int end_axis = -1, StreamOrDevice s = {});
array flatten(const array& a, StreamOrDevice s = {});
array unflatten(const array& a, int axis, Shape shape, StreamOrDevice s = {});
array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array squeeze(const array& a, int axis, StreamOrDevice s = {});
array squeeze(const array& a, StreamOrDevice s = {});
array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array expand_dims(const array& a, int axis, StreamOrDevice s = {});

array transpose(const array& a, std::vector<int> axes, StreamOrDevice s = {});
array transpose(const array& a, StreamOrDevice s = {});
inline array permute_dims(const array& a, std::vector<int> axes, StreamOrDevice s = {}) {
  return transpose(a, std::move(axes), s);
}
array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s = {});
array moveaxis(const array& a, int source, int destination, StreamOrDevice s = {});

// NumPy slicing a[start:stop:step] per axis; bounds are clamped like Python's.
array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s = {});
array slice(const array& a, Shape start, Shape stop, StreamOrDevice s = {});

array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s = {});

// Overwrites src[start:stop:strides] (clamped like slice) with `update`, broadcast to the slice's
// shape and converted to src's dtype.
array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                   StreamOrDevice s = {});
array slice_update(const array& src, const array& update, Shape start, Shape stop,
                   StreamOrDevice s = {});

// Joins arrays along an existing axis; the result has their promoted dtype. Without an axis the
// arrays are flattened first.
array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s = {});
array concatenate(std::vector<array> arrays, StreamOrDevice s = {});
inline array concat(std::vector<array> arrays, int axis, StreamOrDevice s = {}) {
  return concatenate(std::move(arrays), axis, s);
}
inline array concat(std::vector<array> arrays, StreamOrDevice s = {}) {
  return concatenate(std::move(arrays), s);
}
// Joins same-shaped arrays along a new axis.
array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s = {});
array stack(const std::vector<array>& arrays, StreamOrDevice s = {});
// The views a[..., i, ...] along `axis`.
std::vector<array> unstack(const array& a, int axis = 0, StreamOrDevice s = {});

// Views: into `num_splits` equal parts, or at `indices` (Python slice semantics).
std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, int num_splits, StreamOrDevice s = {});
std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s = {});

// NumPy tile and repeat.
array tile(const array& arr, std::vector<int> reps, StreamOrDevice s = {});
array repeat(const array& arr, int repeats, int axis, StreamOrDevice s = {});
array repeat(const array& arr, int repeats, StreamOrDevice s = {});

// Pads `axes` by low/high widths, with `pad_value` (a scalar, "constant") or with copies of the
// edge values ("edge").
array pad(const array& a, const std::vector<int>& axes, const Shape& low_pad_size,
          const Shape& high_pad_size, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});
// One (low, high) pair per axis.
array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width,
          const array& pad_value = array(0), const std::string& mode = "constant",
          StreamOrDevice s = {});
array pad(const array& a, const std::pair<int, int>& pad_width, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});
array pad(const array& a, int pad_width, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});

// Circular shifts. Without axes the array is rolled as if flattened; several shifts of one axis
// add up.
array roll(const array& a, int shift, StreamOrDevice s = {});
// Reverses the order of elements along `axes` (every axis when none are given); a view.
array flip(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array flip(const array& a, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, StreamOrDevice s = {});
array roll(const array& a, int shift, int axis, StreamOrDevice s = {});
array roll(const array& a, int shift, const std::vector<int>& axes, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, int axis, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, const std::vector<int>& axes, StreamOrDevice s = {});

// Zero the elements above (tril) or below (triu) the k-th diagonal of the last two axes.
array tril(array x, int k = 0, StreamOrDevice s = {});
array triu(array x, int k = 0, StreamOrDevice s = {});
// View of the diagonals of the (axis1, axis2) planes, appended as the last axis.
array diagonal(const array& a, int offset = 0, int axis1 = 0, int axis2 = 1, StreamOrDevice s = {});
// 1-D input: the square matrix with `a` on its k-th diagonal. 2-D input: its k-th diagonal.
array diag(const array& a, int k = 0, StreamOrDevice s = {});

// Coordinate grids; "xy" indexing swaps the first two output axes.
std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse = false,
                            const std::string& indexing = "xy", StreamOrDevice s = {});
// Kronecker product.
array kron(const array& a, const array& b, StreamOrDevice s = {});
// The same bytes read as `dtype`; a different item size rescales the last axis.
array view(const array& a, const Dtype& dtype, StreamOrDevice s = {});

array atleast_1d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_1d(const std::vector<array>& a, StreamOrDevice s = {});
array atleast_2d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_2d(const std::vector<array>& a, StreamOrDevice s = {});
array atleast_3d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_3d(const std::vector<array>& a, StreamOrDevice s = {});

}  // namespace mlx::core
