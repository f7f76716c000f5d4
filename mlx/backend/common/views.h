// Views over an input's buffer, shared by every backend's layout kernels.
#pragma once

#include <optional>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {

// Makes `out` a view of `in` with `strides`, starting `offset` elements further on.
void set_view(const array& in, array& out, const Strides& strides, int64_t offset = 0);
// Strides that express `new_shape` over the same memory, if no copy is needed.
std::optional<Strides> reshape_strides(const Shape& shape, const Strides& strides,
                                       const Shape& new_shape);
inline std::optional<Strides> reshape_strides(const array& in, const Shape& new_shape) {
  return reshape_strides(in.shape(), in.strides(), new_shape);
}
// Reshape and View (dtype reinterpretation) without a copy; false when a copy is needed.
bool reshape_as_view(const array& in, array& out);
bool reinterpret_as_view(const array& in, array& out);
// Concatenate without a copy: where `inputs` already lie in one buffer as their concatenation
// along `axis` would (the same strides, each starting where the one before ends), makes `out`
// that view and returns true. An attention's gradients written into one buffer become the
// gradient of the packed projection they were sliced from this way.
bool concatenate_as_view(const std::vector<array>& inputs, int axis, array& out);
// x's strides when read as broadcast to `shape` (of x's rank): dimensions of size 1 that grow
// read stride 0.
Strides broadcast_strides(const array& x, const Shape& shape);

}  // namespace mlx::core
