// Transform rules of the layout primitives.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/primitives/shape.h"
#include "mlx/transforms/rule_utils.h"
#include "mlx/transforms/widen_products.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// Slice and SliceUpdate store normalized bounds, where a negative step's stop may be -1 ("before
// index 0"). The public ops read -1 as the last index, so that stop is passed as -n - 1.
Shape op_stop(const Shape& stop, const Shape& strides, const Shape& in_shape) {
  Shape out = stop;
  for (size_t i = 0; i < out.size(); ++i) {
    if (strides[i] < 0 && out[i] < 0) {
      out[i] -= in_shape[i];
    }
  }
  return out;
}

// Bounds with a full-range entry for a batch axis of size `batch` inserted at `axis`.
struct SliceBounds {
  Shape start, stop, strides;
};
SliceBounds with_batch_axis(const Shape& start, const Shape& stop, const Shape& strides, int axis,
                            int batch) {
  SliceBounds b{start, stop, strides};
  b.start.insert(b.start.begin() + axis, 0);
  b.stop.insert(b.stop.begin() + axis, batch);
  b.strides.insert(b.strides.begin() + axis, 1);
  return b;
}

// The tangent given for input `i`, if any.
std::optional<array> tangent_of(const std::vector<array>& tangents, const std::vector<int>& argnums,
                                int i) {
  auto it = std::find(argnums.begin(), argnums.end(), i);
  if (it == argnums.end()) {
    return std::nullopt;
  }
  return tangents[it - argnums.begin()];
}

// The batch size of the first mapped input.
int batch_size(const std::vector<array>& inputs, const std::vector<int>& axes) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (axes[i] >= 0) {
      return inputs[i].shape(axes[i]);
    }
  }
  throw std::logic_error("[vmap] A rule was called without a mapped input.");
}

// `x` with its batch axis in front; an unmapped `x` is broadcast over the batch (a view).
array batched_first(const array& x, int axis, int batch, Stream s) {
  if (axis >= 0) {
    return detail::batch_first(x, axis);
  }
  Shape shape = x.shape();
  shape.insert(shape.begin(), batch);
  return broadcast_to(expand_dims(x, 0, s), shape, s);
}

}  // namespace

std::vector<array> Copy::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  return {tangents[0]};
}
std::vector<array> Copy::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                             const std::vector<int>&, const std::vector<array>&) {
  return {cotangents[0]};
}
std::pair<std::vector<array>, std::vector<int>> Copy::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  return {{copy(inputs[0], stream())}, axes};
}

// AsType

std::vector<array> AsType::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                               const std::vector<int>&) {
  return {astype(tangents[0], dtype_, stream())};
}
std::vector<array> AsType::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents, const std::vector<int>&,
                               const std::vector<array>&) {
  // float32 weights cast to 16 bits: their gradient is stored in float32 by the product that
  // computes it when nothing else reads its 16-bit result.
  if (primals[0].dtype() == float32) {
    if (auto wide = detail::widen_product_cotangent(cotangents[0])) {
      return {*wide};
    }
  }
  return {astype(cotangents[0], primals[0].dtype(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> AsType::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  return {{astype(inputs[0], dtype_, stream())}, axes};
}

// Broadcast

std::vector<array> Broadcast::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {broadcast_to(tangents[0], shape_, stream())};
}
std::vector<array> Broadcast::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>&) {
  // Sum over the axes the broadcast created or stretched.
  const Shape& in = primals[0].shape();
  int lead = static_cast<int>(shape_.size()) - static_cast<int>(in.size());
  std::vector<int> axes;
  for (int i = 0; i < static_cast<int>(shape_.size()); ++i) {
    if (i < lead || (in[i - lead] == 1 && shape_[i] != 1)) {
      axes.push_back(i);
    }
  }
  array summed = axes.empty() ? cotangents[0] : sum(cotangents[0], axes, true, stream());
  return {reshape(summed, in, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Broadcast::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  // Line the slice up with the target's trailing axes, then broadcast behind the batch axis.
  Shape aligned = x.shape();
  aligned.insert(aligned.begin() + 1, shape_.size() + 1 - x.ndim(), 1);
  Shape target = shape_;
  target.insert(target.begin(), x.shape(0));
  return {{broadcast_to(reshape(x, aligned, stream()), target, stream())}, {0}};
}

// Reshape

std::vector<array> Reshape::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                const std::vector<int>&) {
  return {reshape(tangents[0], shape_, stream())};
}
std::vector<array> Reshape::vjp(const std::vector<array>& primals,
                                const std::vector<array>& cotangents, const std::vector<int>&,
                                const std::vector<array>&) {
  return {reshape(cotangents[0], primals[0].shape(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> Reshape::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  Shape target = shape_;
  target.insert(target.begin(), x.shape(0));
  return {{reshape(x, target, stream())}, {0}};
}

// Transpose

std::vector<array> Transpose::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {transpose(tangents[0], axes_, stream())};
}
std::vector<array> Transpose::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  std::vector<int> inverse(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) {
    inverse[axes_[i]] = static_cast<int>(i);
  }
  return {transpose(cotangents[0], inverse, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Transpose::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  // Keep the batch axis in front and permute the others around it.
  int b = axes[0];
  std::vector<int> perm{b};
  for (int a : axes_) {
    perm.push_back(a < b ? a : a + 1);
  }
  return {{transpose(inputs[0], perm, stream())}, {0}};
}

// Slice

std::vector<array> Slice::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                              const std::vector<int>&) {
  return {
      slice(tangents[0], start_, op_stop(stop_, strides_, primals[0].shape()), strides_, stream())};
}
std::vector<array> Slice::vjp(const std::vector<array>& primals,
                              const std::vector<array>& cotangents, const std::vector<int>&,
                              const std::vector<array>&) {
  // The cotangent goes back to the read positions; the rest of the input gets zeros.
  const array& in = primals[0];
  return {slice_update(zeros(in.shape(), in.dtype(), stream()), cotangents[0], start_,
                       op_stop(stop_, strides_, in.shape()), strides_, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Slice::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  const array& x = inputs[0];
  int b = axes[0];
  Shape slice_shape = x.shape();
  slice_shape.erase(slice_shape.begin() + b);
  auto bounds =
      with_batch_axis(start_, op_stop(stop_, strides_, slice_shape), strides_, b, x.shape(b));
  return {{slice(x, bounds.start, bounds.stop, bounds.strides, stream())}, {b}};
}

// Split: the pieces tile the axis, so the input's cotangent is theirs concatenated.

std::vector<array> Split::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                              const std::vector<int>&) {
  return split(tangents[0], boundaries_, axis_, stream());
}
std::vector<array> Split::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                              const std::vector<int>&, const std::vector<array>&) {
  return {concatenate(cotangents, axis_, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Split::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  const int b = axes[0];
  std::vector<array> pieces = split(inputs[0], boundaries_, axis_ + (b <= axis_), stream());
  return {pieces, std::vector<int>(pieces.size(), b)};
}

// AsStrided. Its input is row-contiguous (the op makes it so): the view reads flat element
// offset + sum(i_k * strides_k).

std::vector<array> AsStrided::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {as_strided(tangents[0], shape_, strides_, offset_, stream())};
}
std::vector<array> AsStrided::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>&) {
  const array& in = primals[0];
  const array& cot = cotangents[0];
  array flat = zeros({static_cast<int32_t>(in.size())}, cot.dtype(), stream());
  if (cot.size() == 0) {
    return {reshape(flat, in.shape(), stream())};
  }
  // Flat input position of every output element; overlapping positions accumulate.
  array index(static_cast<int64_t>(offset_), int64);
  for (size_t k = 0; k < shape_.size(); ++k) {
    Shape axis_shape(shape_.size(), 1);
    axis_shape[k] = shape_[k];
    array step = multiply(arange(0.0, static_cast<double>(shape_[k]), 1.0, int64, stream()),
                          array(static_cast<int64_t>(strides_[k]), int64), stream());
    index = add(index, reshape(step, axis_shape, stream()), stream());
  }
  int32_t n = static_cast<int32_t>(cot.size());
  array updates = reshape(cot, {n, 1}, stream());
  flat = scatter_add(flat, {reshape(index, {n}, stream())}, updates, {0}, stream());
  return {reshape(flat, in.shape(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> AsStrided::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  // Batch-first and row-contiguous, slice b starts at b * (slice size).
  array x = detail::batch_first(inputs[0], axes[0]);
  int64_t slice_size = 1;
  for (int i = 1; i < x.ndim(); ++i) {
    slice_size *= x.shape(i);
  }
  Shape shape = shape_;
  shape.insert(shape.begin(), x.shape(0));
  Strides strides = strides_;
  strides.insert(strides.begin(), slice_size);
  return {{as_strided(x, std::move(shape), std::move(strides), offset_, stream())}, {0}};
}

// Concatenate

std::vector<array> Concatenate::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  Dtype dt = result_type(primals);
  std::vector<array> parts;
  for (int i = 0; i < static_cast<int>(primals.size()); ++i) {
    auto t = tangent_of(tangents, argnums, i);
    parts.push_back(t ? astype(*t, dt, stream()) : zeros(primals[i].shape(), dt, stream()));
  }
  return {concatenate(std::move(parts), axis_, stream())};
}
std::vector<array> Concatenate::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cot = cotangents[0];
  std::vector<int> offsets(primals.size() + 1, 0);
  for (size_t i = 0; i < primals.size(); ++i) {
    offsets[i + 1] = offsets[i] + primals[i].shape(axis_);
  }
  std::vector<array> grads;
  for (int i : argnums) {
    Shape start(cot.ndim(), 0);
    Shape stop = cot.shape();
    start[axis_] = offsets[i];
    stop[axis_] = offsets[i + 1];
    grads.push_back(astype(slice(cot, std::move(start), std::move(stop), stream()),
                           primals[i].dtype(), stream()));
  }
  return grads;
}
std::pair<std::vector<array>, std::vector<int>> Concatenate::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  int batch = batch_size(inputs, axes);
  std::vector<array> parts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    parts.push_back(batched_first(inputs[i], axes[i], batch, stream()));
  }
  return {{concatenate(std::move(parts), axis_ + 1, stream())}, {0}};
}

// SliceUpdate: out = src with the slice replaced by update (already of the slice's shape).

std::vector<array> SliceUpdate::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  const array& src = primals[0];
  if (!is_inexact(src.dtype())) {
    return {zeros_like(src, stream())};
  }
  auto t_src = tangent_of(tangents, argnums, 0);
  auto t_upd = tangent_of(tangents, argnums, 1);
  return {slice_update(t_src ? *t_src : zeros_like(src, stream()),
                       t_upd ? *t_upd : array(0, src.dtype()), start_,
                       op_stop(stop_, strides_, src.shape()), strides_, stream())};
}
std::vector<array> SliceUpdate::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cot = cotangents[0];
  Shape stop = op_stop(stop_, strides_, cot.shape());
  std::vector<array> grads;
  for (int i : argnums) {
    if (i == 0) {
      // The overwritten region does not reach the output.
      grads.push_back(slice_update(cot, array(0, cot.dtype()), start_, stop, strides_, stream()));
    } else {
      grads.push_back(
          astype(slice(cot, start_, stop, strides_, stream()), primals[1].dtype(), stream()));
    }
  }
  return grads;
}
std::pair<std::vector<array>, std::vector<int>> SliceUpdate::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  int batch = batch_size(inputs, axes);
  const array& src = inputs[0];
  Shape src_shape = src.shape();
  if (axes[0] >= 0) {
    src_shape.erase(src_shape.begin() + axes[0]);
  }
  // An unmapped update broadcasts over the batch inside slice_update.
  array upd = detail::batch_first(inputs[1], axes[1]);
  auto bounds = with_batch_axis(start_, op_stop(stop_, strides_, src_shape), strides_, 0, batch);
  return {{slice_update(batched_first(src, axes[0], batch, stream()), upd, bounds.start,
                        bounds.stop, bounds.strides, stream())},
          {0}};
}

// Diagonal: the output holds the axes other than axis1/axis2 in order, then the diagonal.

std::vector<array> Diagonal::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                 const std::vector<int>&) {
  return {diagonal(tangents[0], offset_, axis1_, axis2_, stream())};
}
std::vector<array> Diagonal::vjp(const std::vector<array>& primals,
                                 const std::vector<array>& cotangents, const std::vector<int>&,
                                 const std::vector<array>&) {
  const array& in = primals[0];
  const array& cot = cotangents[0];
  int nd = in.ndim();
  int n1 = in.shape(axis1_), n2 = in.shape(axis2_);
  // Work in the layout (other axes..., axis1, axis2) with the last two flattened: the diagonal
  // is every (n2 + 1)-th element from `first`.
  std::vector<int> perm;
  Shape shape;
  for (int i = 0; i < nd; ++i) {
    if (i != axis1_ && i != axis2_) {
      perm.push_back(i);
      shape.push_back(in.shape(i));
    }
  }
  perm.insert(perm.end(), {axis1_, axis2_});
  Shape start(shape.size() + 1, 0);
  Shape stop = shape;
  Shape strides(shape.size() + 1, 1);
  shape.push_back(n1 * n2);
  array flat = zeros(shape, cot.dtype(), stream());
  int len = cot.shape(-1);
  if (len > 0) {
    int first = offset_ >= 0 ? offset_ : -offset_ * n2;
    start.back() = first;
    stop.push_back(first + (len - 1) * (n2 + 1) + 1);
    strides.back() = n2 + 1;
    flat = slice_update(flat, cot, std::move(start), std::move(stop), std::move(strides), stream());
  }
  shape.back() = n1;
  shape.push_back(n2);
  std::vector<int> inverse(nd);
  for (int i = 0; i < nd; ++i) {
    inverse[perm[i]] = i;
  }
  return {transpose(reshape(flat, shape, stream()), inverse, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Diagonal::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  int b = axes[0];
  int a1 = axis1_ + (axis1_ >= b ? 1 : 0);
  int a2 = axis2_ + (axis2_ >= b ? 1 : 0);
  // The batch axis keeps its place among the axes that stay.
  int out_axis = b - (a1 < b ? 1 : 0) - (a2 < b ? 1 : 0);
  return {{diagonal(inputs[0], offset_, a1, a2, stream())}, {out_axis}};
}

// View: reinterpreting bytes has no derivative. Integer results are constants (zero tangent).

std::vector<array> View::jvp(const std::vector<array>& primals, const std::vector<array>&,
                             const std::vector<int>&) {
  if (!is_inexact(dtype_)) {
    return {zeros_like(view(primals[0], dtype_, stream()), stream())};
  }
  throw std::invalid_argument(msg("[View::jvp] Reinterpreting the bytes of ", primals[0].dtype(),
                                  " as ", dtype_, " is not differentiable."));
}
std::vector<array> View::vjp(const std::vector<array>& primals, const std::vector<array>&,
                             const std::vector<int>&, const std::vector<array>&) {
  if (!is_inexact(dtype_)) {
    return {zeros_like(primals[0], stream())};
  }
  throw std::invalid_argument(msg("[View::vjp] Reinterpreting the bytes of ", primals[0].dtype(),
                                  " as ", dtype_, " is not differentiable."));
}
std::pair<std::vector<array>, std::vector<int>> View::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  // A change of item size rescales the last axis, so the batch axis must not be it.
  array x = inputs[0];
  int b = axes[0];
  if (b == x.ndim() - 1 && static_cast<int>(x.itemsize()) != size_of(dtype_)) {
    x = detail::batch_first(x, b);
    b = 0;
  }
  return {{view(x, dtype_, stream())}, {b}};
}

}  // namespace mlx::core
