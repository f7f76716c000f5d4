// Shape and layout ops. Views (reshape, transpose, slice, broadcast) copy nothing.
#pragma once

#include <optional>

#include "mlx/array.h"
#include "mlx/stream.h"

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

}  // namespace mlx::core
