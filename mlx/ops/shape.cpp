#include "mlx/ops/shape.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <typeinfo>

#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/graph.h"
#include "mlx/primitives/shape.h"
#include "mlx/primitives/transform.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// Python's a[start:stop:step] per axis: negative bounds count from the end, then bounds are
// clamped. Rewrites start (first index read) and stop (clamped), both 0 for empty axes so that
// the bounds alone tell the slice's shape, and returns that shape.
Shape normalize_slice(const Shape& in_shape, Shape& start, Shape& stop, const Shape& strides,
                      const char* op) {
  size_t nd = in_shape.size();
  if (start.size() != nd || stop.size() != nd || strides.size() != nd) {
    throw std::invalid_argument(
        msg("[", op, "] Invalid number of indices or strides for array of shape ", in_shape,
            "; got start ", start, ", stop ", stop, " and strides ", strides, "."));
  }
  Shape shape(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t n = in_shape[i];
    int64_t step = strides[i];
    if (step == 0) {
      throw std::invalid_argument(
          msg("[", op, "] Slice step cannot be zero; got strides ", strides, "."));
    }
    auto clamp = [&](int64_t v) -> int64_t {
      if (v < 0) {
        v += n;
      }
      return step > 0 ? std::clamp<int64_t>(v, 0, n) : std::clamp<int64_t>(v, -1, n - 1);
    };
    int64_t b = clamp(start[i]);
    int64_t e = clamp(stop[i]);
    int64_t len = step > 0 ? (e > b ? (e - b + step - 1) / step : 0)
                           : (b > e ? (b - e - step - 1) / -step : 0);
    start[i] = static_cast<int32_t>(len > 0 ? b : 0);
    stop[i] = static_cast<int32_t>(len > 0 ? e : 0);
    shape[i] = static_cast<int32_t>(len);
  }
  return shape;
}

// Checks that a computed dimension fits a Shape entry.
int32_t checked_dim(int64_t d, const char* op) {
  if (d > INT32_MAX) {
    throw std::invalid_argument(msg("[", op, "] The result would have a dimension of size ", d,
                                    ", more than the largest supported ", INT32_MAX, "."));
  }
  return static_cast<int32_t>(d);
}

// Leading 1s added so that `shape` has `nd` dimensions.
Shape left_pad_shape(const Shape& shape, size_t nd) {
  Shape out(nd - shape.size(), 1);
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

}  // namespace

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s) {
  if (a.shape() == shape) {
    return a;
  }
  if (std::any_of(shape.begin(), shape.end(), [](int32_t d) { return d < 0; })) {
    throw std::invalid_argument(msg("[broadcast_to] Negative dimension in shape ", shape, "."));
  }
  // Each of a's axes, aligned to the right, is 1 or the target's (checked without building
  // the broadcast shape: this runs for every broadcast operand of every op).
  const size_t lead = shape.size() - std::min(shape.size(), a.shape().size());
  bool fits = a.ndim() <= shape.size();
  for (size_t i = 0; fits && i < a.shape().size(); ++i) {
    fits = a.shape()[i] == 1 || a.shape()[i] == shape[lead + i];
  }
  if (!fits) {
    throw std::invalid_argument(
        msg("[broadcast_to] Cannot broadcast array of shape ", a.shape(), " to ", shape, "."));
  }
  return array(shape, a.dtype(), std::make_shared<Broadcast>(to_stream(s), shape), {a});
}

std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s) {
  std::vector<Shape> shapes;
  for (auto& in : inputs) {
    shapes.push_back(in.shape());
  }
  Shape shape = broadcast_shapes(shapes, "broadcast_arrays");
  std::vector<array> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (detail::in_shapeless_tracing()) {
      std::vector<array> others = inputs;
      std::swap(others[0], others[i]);
      out.push_back(dynamic_broadcast(others, s));
    } else {
      out.push_back(broadcast_to(inputs[i], shape, s));
    }
  }
  return out;
}

array reshape(const array& a, Shape shape, StreamOrDevice s) {
  int infer = -1;
  size_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        throw std::invalid_argument("[reshape] Can only infer one dimension.");
      }
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument(
          msg("[reshape] Invalid dimension ", shape[i], " in ", shape, "."));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || a.size() % known != 0) {
      throw std::invalid_argument(msg("[reshape] Cannot infer the shape of an array of size ",
                                      a.size(), " from ", shape, "."));
    }
    shape[infer] = static_cast<int32_t>(a.size() / known);
    known = a.size();
  }
  if (known != a.size()) {
    throw std::invalid_argument(
        msg("[reshape] Cannot reshape array of size ", a.size(), " into shape ", shape, "."));
  }
  const bool shapeless = detail::in_shapeless_tracing();
  // A shapeless trace keeps a reshape to the same shape: x.reshape(-1, 1) of an (n, 1) input
  // is not the identity for other inputs.
  if (shape == a.shape() && !shapeless) {
    return a;
  }
  auto p = shapeless ? std::make_shared<Reshape>(to_stream(s), shape, a.shape(), infer)
                     : std::make_shared<Reshape>(to_stream(s), shape);
  return array(std::move(shape), a.dtype(), std::move(p), {a});
}

array flatten(const array& a, int start_axis, int end_axis, StreamOrDevice s) {
  int nd = a.ndim();
  if (nd == 0) {
    return reshape(a, {1}, s);
  }
  start_axis = normalize_axis(start_axis, nd, "flatten");
  end_axis = normalize_axis(end_axis, nd, "flatten");
  if (start_axis > end_axis) {
    throw std::invalid_argument(
        msg("[flatten] start_axis ", start_axis, " must not be after end_axis ", end_axis, "."));
  }
  Shape shape(a.shape().begin(), a.shape().begin() + start_axis);
  int64_t merged = 1;
  for (int i = start_axis; i <= end_axis; ++i) {
    merged *= a.shape(i);
  }
  shape.push_back(static_cast<int32_t>(merged));
  shape.insert(shape.end(), a.shape().begin() + end_axis + 1, a.shape().end());
  if (detail::in_shapeless_tracing()) {
    // The merged dimension is inferred on replay, as if given as -1.
    Shape traced = a.shape();
    return array(shape, a.dtype(),
                 std::make_shared<Reshape>(to_stream(s), shape, traced, start_axis), {a});
  }
  return reshape(a, std::move(shape), s);
}

array flatten(const array& a, StreamOrDevice s) { return flatten(a, 0, -1, s); }

array unflatten(const array& a, int axis, Shape shape, StreamOrDevice s) {
  axis = normalize_axis(axis, a.ndim(), "unflatten");
  if (shape.empty()) {
    throw std::invalid_argument("[unflatten] The new shape must not be empty.");
  }
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        throw std::invalid_argument("[unflatten] Can only infer one dimension.");
      }
      infer = static_cast<int>(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || a.shape(axis) % known != 0) {
      throw std::invalid_argument(
          msg("[unflatten] Cannot infer ", shape, " for axis size ", a.shape(axis), "."));
    }
    shape[infer] = static_cast<int32_t>(a.shape(axis) / known);
    known *= shape[infer];
  }
  if (known != a.shape(axis)) {
    throw std::invalid_argument(msg("[unflatten] Shape ", shape, " does not match axis ", axis,
                                    " of size ", a.shape(axis), "."));
  }
  Shape out(a.shape().begin(), a.shape().begin() + axis);
  out.insert(out.end(), shape.begin(), shape.end());
  out.insert(out.end(), a.shape().begin() + axis + 1, a.shape().end());
  return reshape(a, std::move(out), s);
}

array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  auto ax = normalize_axes(axes, a.ndim(), "squeeze");
  Shape shape;
  for (int i = 0; i < a.ndim(); ++i) {
    if (std::find(ax.begin(), ax.end(), i) != ax.end()) {
      if (a.shape(i) != 1) {
        throw std::invalid_argument(msg("[squeeze] Cannot squeeze axis ", i, " of size ",
                                        a.shape(i), " in shape ", a.shape(), "."));
      }
    } else {
      shape.push_back(a.shape(i));
    }
  }
  if (detail::in_shapeless_tracing() && !ax.empty()) {
    std::sort(ax.begin(), ax.end());
    return array(std::move(shape), a.dtype(), std::make_shared<SqueezeAxes>(to_stream(s), ax), {a});
  }
  return reshape(a, std::move(shape), s);
}

array squeeze(const array& a, int axis, StreamOrDevice s) {
  return squeeze(a, std::vector<int>{axis}, s);
}

array squeeze(const array& a, StreamOrDevice s) {
  // The axes of size 1 now: a shapeless replay checks that they still are.
  std::vector<int> axes;
  for (int i = 0; i < a.ndim(); ++i) {
    if (a.shape(i) == 1) {
      axes.push_back(i);
    }
  }
  return squeeze(a, axes, s);
}

array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  int out_nd = a.ndim() + static_cast<int>(axes.size());
  auto ax = normalize_axes(axes, out_nd, "expand_dims");
  std::sort(ax.begin(), ax.end());
  Shape shape = a.shape();
  for (int axis : ax) {
    shape.insert(shape.begin() + axis, 1);
  }
  if (detail::in_shapeless_tracing() && !ax.empty()) {
    return array(std::move(shape), a.dtype(), std::make_shared<ExpandAxes>(to_stream(s), ax), {a});
  }
  return reshape(a, std::move(shape), s);
}

array expand_dims(const array& a, int axis, StreamOrDevice s) {
  return expand_dims(a, std::vector<int>{axis}, s);
}

array transpose(const array& a, std::vector<int> axes, StreamOrDevice s) {
  if (static_cast<int>(axes.size()) != a.ndim()) {
    throw std::invalid_argument(msg("[transpose] Received ", axes.size(), " axes for array with ",
                                    a.ndim(), " dimensions."));
  }
  axes = normalize_axes(axes, a.ndim(), "transpose");
  bool identity = true;
  Shape shape(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    shape[i] = a.shape(axes[i]);
    identity &= axes[i] == static_cast<int>(i);
  }
  if (identity) {
    return a;
  }
  return array(std::move(shape), a.dtype(), std::make_shared<Transpose>(to_stream(s), axes), {a});
}

array transpose(const array& a, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.rbegin(), axes.rend(), 0);
  return transpose(a, std::move(axes), s);
}

array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s) {
  axis1 = normalize_axis(axis1, a.ndim(), "swapaxes");
  axis2 = normalize_axis(axis2, a.ndim(), "swapaxes");
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[axis1], axes[axis2]);
  return transpose(a, std::move(axes), s);
}

array moveaxis(const array& a, int source, int destination, StreamOrDevice s) {
  source = normalize_axis(source, a.ndim(), "moveaxis");
  destination = normalize_axis(destination, a.ndim(), "moveaxis");
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  axes.erase(axes.begin() + source);
  axes.insert(axes.begin() + destination, source);
  return transpose(a, std::move(axes), s);
}

array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s) {
  // In a shapeless trace only a slice to the end of every axis (x[:, :]: stop INT32_MAX) is
  // the identity for any shape; x[:, :3] of a 3-column input is not.
  bool whole = true;
  for (size_t i = 0; i < stop.size() && i < start.size(); ++i) {
    whole &= start[i] == 0 && stop[i] == std::numeric_limits<int32_t>::max();
  }
  Shape shape = normalize_slice(a.shape(), start, stop, strides, "slice");
  bool identity = whole || !detail::in_shapeless_tracing();
  for (int i = 0; i < a.ndim(); ++i) {
    identity &= start[i] == 0 && strides[i] == 1 && shape[i] == a.shape(i);
  }
  if (identity) {
    return a;
  }
  return array(
      std::move(shape), a.dtype(),
      std::make_shared<Slice>(to_stream(s), std::move(start), std::move(stop), std::move(strides)),
      {a});
}

array slice(const array& a, Shape start, Shape stop, StreamOrDevice s) {
  Shape strides(a.ndim(), 1);
  return slice(a, std::move(start), std::move(stop), std::move(strides), s);
}

array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s) {
  if (shape.size() != strides.size()) {
    throw std::invalid_argument(
        msg("[as_strided] Shape ", shape, " and strides ", strides, " must have the same length."));
  }
  // The view reads the row-major elements of `a`: every element it reaches must be one of them
  // (a stride or offset past the end would read other memory).
  if (shape_size(shape) > 0) {
    __int128 lo = static_cast<__int128>(offset), hi = lo;
    for (size_t i = 0; i < shape.size(); ++i) {
      __int128 reach = static_cast<__int128>(shape[i] - 1) * strides[i];
      (reach < 0 ? lo : hi) += reach;
    }
    if (lo < 0 || hi >= static_cast<__int128>(a.size())) {
      throw std::invalid_argument(msg("[as_strided] Shape ", shape, ", strides ", strides,
                                      " and offset ", offset, " reach outside the ", a.size(),
                                      " elements of the input."));
    }
  }
  a = contiguous(std::move(a), false, s);
  auto p = std::make_shared<AsStrided>(to_stream(s), shape, std::move(strides), offset);
  Dtype dt = a.dtype();
  return array(std::move(shape), dt, std::move(p), {std::move(a)});
}

array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                   StreamOrDevice s) {
  Shape upd_shape = normalize_slice(src.shape(), start, stop, strides, "slice_update");
  if (broadcast_shapes(update.shape(), upd_shape, "slice_update") != upd_shape) {
    throw std::invalid_argument(msg("[slice_update] Cannot broadcast an update of shape ",
                                    update.shape(), " to the slice shape ", upd_shape, "."));
  }
  if (shape_size(upd_shape) == 0) {
    return src;
  }
  // The kernel converts the update's dtype while copying it.
  array upd = broadcast_to(update, upd_shape, s);
  auto p = std::make_shared<SliceUpdate>(to_stream(s), std::move(start), std::move(stop),
                                         std::move(strides));
  return array(src.shape(), src.dtype(), std::move(p), {src, std::move(upd)});
}

array slice_update(const array& src, const array& update, Shape start, Shape stop,
                   StreamOrDevice s) {
  Shape strides(src.ndim(), 1);
  return slice_update(src, update, std::move(start), std::move(stop), std::move(strides), s);
}

namespace {

// Arrays concatenated along their last axis that are all reshapes merging the same trailing
// dimensions Q of their sources (unevaluated Reshape nodes, as the derivative of splitting a
// fused projection into heads makes) equal those sources stacked before Q, then merged: the
// merge of a stacked result is a view. Otherwise each reshape of a transposed source (the
// attention gradients in head-major order) would be copied once to merge it and again to
// concatenate it. Returns nothing when the arrays are not of that form.
std::optional<array> concatenate_reshaped(const std::vector<array>& arrays, int ax,
                                          StreamOrDevice s) {
  if (ax != arrays[0].ndim() - 1 || detail::in_shapeless_tracing()) {
    return std::nullopt;
  }
  std::vector<array> stacked;
  for (const array& a : arrays) {
    // Only unscheduled nodes: an evaluation may be detaching any other's inputs.
    if (a.status() != array::Status::unscheduled || !a.has_primitive() ||
        typeid(a.primitive()) != typeid(Reshape) || a.dtype() != arrays[0].dtype()) {
      return std::nullopt;
    }
    const array& src = a.inputs()[0];
    const array& first = arrays[0].inputs()[0];  // a Reshape: checked first
    if (src.ndim() < ax + 2 ||
        !std::equal(a.shape().begin(), a.shape().begin() + ax, src.shape().begin()) ||
        !std::equal(src.shape().begin() + ax, src.shape().end(), first.shape().begin() + ax,
                    first.shape().end())) {
      return std::nullopt;
    }
    stacked.push_back(expand_dims(src, ax, s));
  }
  Shape shape = arrays[0].shape();
  shape[ax] *= static_cast<int32_t>(arrays.size());
  return reshape(concatenate(std::move(stacked), ax, s), std::move(shape), s);
}

}  // namespace

array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) {
    throw std::invalid_argument("[concatenate] No arrays provided for concatenation.");
  }
  const Shape& first = arrays[0].shape();
  for (auto& a : arrays) {
    if (a.ndim() != arrays[0].ndim()) {
      throw std::invalid_argument(
          msg("[concatenate] All the input arrays must have the same number of dimensions; got "
              "shapes ",
              first, " and ", a.shape(), "."));
    }
  }
  int ax = normalize_axis(axis, arrays[0].ndim(), "concatenate");
  int64_t total = 0;
  for (auto& a : arrays) {
    for (int i = 0; i < a.ndim(); ++i) {
      if (i != ax && a.shape(i) != first[i]) {
        throw std::invalid_argument(
            msg("[concatenate] All the input array dimensions must match exactly except for the "
                "concatenation axis ",
                ax, "; got shapes ", first, " and ", a.shape(), "."));
      }
    }
    total += a.shape(ax);
  }
  if (arrays.size() == 1) {
    return arrays[0];
  }
  if (auto merged = concatenate_reshaped(arrays, ax, s)) {
    return *merged;
  }
  Shape shape = first;
  shape[ax] = checked_dim(total, "concatenate");
  Dtype dtype = result_type(arrays);
  return array(std::move(shape), dtype, std::make_shared<Concatenate>(to_stream(s), ax),
               std::move(arrays));
}

array concatenate(std::vector<array> arrays, StreamOrDevice s) {
  for (auto& a : arrays) {
    a = flatten(a, s);
  }
  return concatenate(std::move(arrays), 0, s);
}

array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) {
    throw std::invalid_argument("[stack] No arrays provided for stacking.");
  }
  for (auto& a : arrays) {
    if (a.shape() != arrays[0].shape()) {
      throw std::invalid_argument(msg("[stack] All arrays must have the same shape; got shapes ",
                                      arrays[0].shape(), " and ", a.shape(), "."));
    }
  }
  int ax = normalize_axis(axis, arrays[0].ndim() + 1, "stack");
  std::vector<array> expanded;
  expanded.reserve(arrays.size());
  for (auto& a : arrays) {
    expanded.push_back(expand_dims(a, ax, s));
  }
  return concatenate(std::move(expanded), ax, s);
}

array stack(const std::vector<array>& arrays, StreamOrDevice s) { return stack(arrays, 0, s); }

std::vector<array> unstack(const array& a, int axis, StreamOrDevice s) {
  if (a.ndim() == 0) {
    throw std::invalid_argument("[unstack] Cannot unstack a scalar array.");
  }
  int ax = normalize_axis(axis, a.ndim(), "unstack");
  std::vector<array> out;
  out.reserve(a.shape(ax));
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  for (int i = 0; i < a.shape(ax); ++i) {
    start[ax] = i;
    stop[ax] = i + 1;
    out.push_back(squeeze(slice(a, start, stop, s), ax, s));
  }
  return out;
}

std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), "split");
  if (indices.empty()) {
    return {a};  // one piece: the whole array, whatever its shape
  }
  // Boundaries in order within the axis (the usual case): one Split primitive, whose pieces
  // tile the axis. Others (NumPy's overlapping or wrapping pieces) and shapeless traces, whose
  // boundaries must keep Slice's semantics for other shapes, take a Slice per piece.
  const int n = a.shape(ax);
  if (!detail::in_shapeless_tracing() && indices.front() >= 0 && indices.back() <= n &&
      std::is_sorted(indices.begin(), indices.end())) {
    auto prim = std::make_shared<Split>(to_stream(s), indices, ax);
    std::vector<Shape> shapes = prim->output_shapes({a});
    std::vector<Dtype> dtypes(shapes.size(), a.dtype());
    return array::make_arrays(std::move(shapes), dtypes, std::move(prim), {a});
  }
  std::vector<array> out;
  out.reserve(indices.size() + 1);
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  for (size_t i = 0; i <= indices.size(); ++i) {
    stop[ax] = i < indices.size() ? indices[i] : a.shape(ax);
    out.push_back(slice(a, start, stop, s));
    start[ax] = stop[ax];
  }
  return out;
}

std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s) {
  return split(a, indices, 0, s);
}

std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), "split");
  if (num_splits <= 0) {
    throw std::invalid_argument(
        msg("[split] The number of splits must be positive; got ", num_splits, "."));
  }
  int n = a.shape(ax);
  if (n % num_splits != 0) {
    throw std::invalid_argument(
        msg("[split] Array split does not result in sub arrays with "
            "equal size; axis ",
            ax, " of shape ", a.shape(), " cannot be split into ", num_splits, " equal parts."));
  }
  Shape indices(num_splits - 1);
  for (int i = 0; i < num_splits - 1; ++i) {
    indices[i] = (i + 1) * (n / num_splits);
  }
  return split(a, indices, ax, s);
}

std::vector<array> split(const array& a, int num_splits, StreamOrDevice s) {
  return split(a, num_splits, 0, s);
}

array tile(const array& arr, std::vector<int> reps, StreamOrDevice s) {
  if (std::any_of(reps.begin(), reps.end(), [](int r) { return r < 0; })) {
    throw std::invalid_argument(msg("[tile] reps must be non-negative; got ", reps, "."));
  }
  size_t nd = std::max(reps.size(), static_cast<size_t>(arr.ndim()));
  Shape shape = left_pad_shape(arr.shape(), nd);
  reps = left_pad_shape(reps, nd);
  // Interleave a rep axis before every axis, broadcast it and merge the pairs.
  Shape expanded, broadcast, out;
  for (size_t i = 0; i < nd; ++i) {
    expanded.insert(expanded.end(), {1, shape[i]});
    broadcast.insert(broadcast.end(), {reps[i], shape[i]});
    out.push_back(checked_dim(static_cast<int64_t>(reps[i]) * shape[i], "tile"));
  }
  array x = broadcast_to(reshape(arr, std::move(expanded), s), broadcast, s);
  return reshape(x, std::move(out), s);
}

array repeat(const array& arr, int repeats, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, arr.ndim(), "repeat");
  if (repeats < 0) {
    throw std::invalid_argument(
        msg("[repeat] Number of repeats cannot be negative; got ", repeats, "."));
  }
  if (repeats == 1) {
    return arr;
  }
  // Each element gets its own new axis of `repeats` broadcast copies.
  Shape expanded = arr.shape();
  expanded.insert(expanded.begin() + ax + 1, 1);
  Shape broadcast = arr.shape();
  broadcast.insert(broadcast.begin() + ax + 1, repeats);
  Shape out = arr.shape();
  out[ax] = checked_dim(static_cast<int64_t>(out[ax]) * repeats, "repeat");
  array x = broadcast_to(reshape(arr, std::move(expanded), s), broadcast, s);
  return reshape(x, std::move(out), s);
}

array repeat(const array& arr, int repeats, StreamOrDevice s) {
  return repeat(flatten(arr, s), repeats, 0, s);
}

namespace {

// Each padded axis in turn becomes [edge copies, x, edge copies].
array pad_edge(const array& a, const std::vector<int>& axes, const Shape& low, const Shape& high,
               StreamOrDevice s) {
  array x = a;
  for (size_t i = 0; i < axes.size(); ++i) {
    int ax = axes[i];
    if (low[i] == 0 && high[i] == 0) {
      continue;
    }
    int n = x.shape(ax);
    if (n == 0) {
      throw std::invalid_argument(msg("[pad] Cannot pad axis ", ax, " of size 0 of shape ",
                                      x.shape(), " in \"edge\" mode."));
    }
    auto edge = [&](int index, int width) {
      Shape start(x.ndim(), 0);
      Shape stop = x.shape();
      start[ax] = index;
      stop[ax] = index + 1;
      Shape shape = x.shape();
      shape[ax] = width;
      return broadcast_to(slice(x, std::move(start), std::move(stop), s), shape, s);
    };
    std::vector<array> parts;
    if (low[i] > 0) {
      parts.push_back(edge(0, low[i]));
    }
    parts.push_back(x);
    if (high[i] > 0) {
      parts.push_back(edge(n - 1, high[i]));
    }
    x = concatenate(std::move(parts), ax, s);
  }
  return x;
}

}  // namespace

array pad(const array& a, const std::vector<int>& axes, const Shape& low_pad_size,
          const Shape& high_pad_size, const array& pad_value, const std::string& mode,
          StreamOrDevice s) {
  if (axes.size() != low_pad_size.size() || axes.size() != high_pad_size.size()) {
    throw std::invalid_argument(msg("[pad] Invalid number of padding sizes passed to pad with ",
                                    axes.size(), " axes; got low ", low_pad_size, " and high ",
                                    high_pad_size, "."));
  }
  if (mode != "constant" && mode != "edge") {
    throw std::invalid_argument(
        msg("[pad] Invalid padding mode \"", mode, "\"; expected \"constant\" or \"edge\"."));
  }
  auto ax = normalize_axes(axes, a.ndim(), "pad");
  Shape out_shape = a.shape();
  Shape start(a.ndim(), 0);
  for (size_t i = 0; i < ax.size(); ++i) {
    auto check = [&](int size, const char* side) {
      if (size < 0) {
        throw std::invalid_argument(msg("[pad] Invalid ", side, " padding size (", size,
                                        ") passed to pad for axis ", ax[i],
                                        ". Padding sizes must be non-negative."));
      }
    };
    check(low_pad_size[i], "low");
    check(high_pad_size[i], "high");
    out_shape[ax[i]] = checked_dim(
        static_cast<int64_t>(out_shape[ax[i]]) + low_pad_size[i] + high_pad_size[i], "pad");
    start[ax[i]] = low_pad_size[i];
  }
  if (mode == "edge") {
    return pad_edge(a, ax, low_pad_size, high_pad_size, s);
  }
  if (pad_value.size() != 1) {
    throw std::invalid_argument(
        msg("[pad] The pad value must be a scalar; got shape ", pad_value.shape(), "."));
  }
  if (out_shape == a.shape()) {
    return a;
  }
  Shape stop = a.shape();
  for (int i = 0; i < a.ndim(); ++i) {
    stop[i] += start[i];
  }
  array out = full(std::move(out_shape), reshape(pad_value, {}, s), a.dtype(), s);
  return slice_update(out, a, std::move(start), std::move(stop), s);
}

array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value,
          const std::string& mode, StreamOrDevice s) {
  std::vector<int> axes(pad_width.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (static_cast<int>(pad_width.size()) != a.ndim()) {
    throw std::invalid_argument(msg("[pad] Expected one (low, high) pair per axis of shape ",
                                    a.shape(), "; got ", pad_width.size(), " pairs."));
  }
  Shape low, high;
  for (auto& [l, h] : pad_width) {
    low.push_back(l);
    high.push_back(h);
  }
  return pad(a, axes, low, high, pad_value, mode, s);
}

array pad(const array& a, const std::pair<int, int>& pad_width, const array& pad_value,
          const std::string& mode, StreamOrDevice s) {
  return pad(a, std::vector<std::pair<int, int>>(a.ndim(), pad_width), pad_value, mode, s);
}

array pad(const array& a, int pad_width, const array& pad_value, const std::string& mode,
          StreamOrDevice s) {
  return pad(a, std::pair{pad_width, pad_width}, pad_value, mode, s);
}

array roll(const array& a, const Shape& shift, const std::vector<int>& axes, StreamOrDevice s) {
  if (shift.size() != axes.size()) {
    throw std::invalid_argument(msg("[roll] The shift and axes must have the same size; got shift ",
                                    shift, " and axes ", axes, "."));
  }
  auto ax = normalize_axes(axes, a.ndim(), "roll", /*allow_duplicates=*/true);
  std::vector<int64_t> total(a.ndim(), 0);
  for (size_t i = 0; i < ax.size(); ++i) {
    total[ax[i]] += shift[i];
  }
  array x = a;
  for (int d = 0; d < a.ndim(); ++d) {
    int64_t n = a.shape(d);
    int64_t k = n == 0 ? 0 : ((total[d] % n) + n) % n;
    if (k == 0) {
      continue;
    }
    // The last k entries move to the front.
    Shape start(a.ndim(), 0);
    Shape stop = a.shape();
    start[d] = static_cast<int32_t>(n - k);
    array tail = slice(x, start, stop, s);
    start[d] = 0;
    stop[d] = static_cast<int32_t>(n - k);
    array head = slice(x, std::move(start), std::move(stop), s);
    x = concatenate({std::move(tail), std::move(head)}, d, s);
  }
  return x;
}

array roll(const array& a, int shift, StreamOrDevice s) {
  return reshape(roll(flatten(a, s), Shape{shift}, std::vector<int>{0}, s), a.shape(), s);
}

array roll(const array& a, const Shape& shift, StreamOrDevice s) {
  int64_t total = 0;
  for (auto k : shift) {
    total += k;
  }
  int64_t n = std::max<int64_t>(static_cast<int64_t>(a.size()), 1);
  return roll(a, static_cast<int>(total % n), s);
}

array roll(const array& a, int shift, int axis, StreamOrDevice s) {
  return roll(a, Shape{shift}, std::vector<int>{axis}, s);
}

array roll(const array& a, int shift, const std::vector<int>& axes, StreamOrDevice s) {
  return roll(a, Shape(axes.size(), shift), axes, s);
}

array roll(const array& a, const Shape& shift, int axis, StreamOrDevice s) {
  return roll(a, shift, std::vector<int>(shift.size(), axis), s);
}

namespace {

array triangle(const array& x, int k, bool lower, const char* op, StreamOrDevice s) {
  if (x.ndim() < 2) {
    throw std::invalid_argument(
        msg("[", op, "] The array must have at least 2 dimensions; got shape ", x.shape(), "."));
  }
  // Offsets past either corner change nothing; clamping keeps i + k in range.
  int rows = x.shape(-2), cols = x.shape(-1);
  k = std::clamp(k, -rows - 1, cols + 1);
  // tri marks j <= i + k: the kept part of tril(k), the zeroed part of triu(k + 1).
  array mask = tri(rows, cols, lower ? k : k - 1, bool_, s);
  array zero(0, x.dtype());
  return lower ? where(mask, x, zero, s) : where(mask, zero, x, s);
}

}  // namespace

array tril(array x, int k, StreamOrDevice s) { return triangle(x, k, true, "tril", s); }
array triu(array x, int k, StreamOrDevice s) { return triangle(x, k, false, "triu", s); }

array flip(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  auto ax = normalize_axes(axes, a.ndim(), "flip");
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  Shape strides(a.ndim(), 1);
  for (int i : ax) {
    start[i] = a.shape(i) - 1;
    stop[i] = -a.shape(i) - 1;  // one before the first element, in Python's terms
    strides[i] = -1;
  }
  return slice(a, std::move(start), std::move(stop), std::move(strides), s);
}

array flip(const array& a, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return flip(a, axes, s);
}

array diagonal(const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
  if (a.ndim() < 2) {
    throw std::invalid_argument(
        msg("[diagonal] The array must have at least 2 dimensions; got shape ", a.shape(), "."));
  }
  int ax1 = normalize_axis(axis1, a.ndim(), "diagonal");
  int ax2 = normalize_axis(axis2, a.ndim(), "diagonal");
  if (ax1 == ax2) {
    throw std::invalid_argument(msg("[diagonal] axis1 and axis2 cannot be the same axis; got ",
                                    axis1, " and ", axis2, "."));
  }
  int64_t n1 = a.shape(ax1), n2 = a.shape(ax2);
  int64_t len = offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2);
  Shape shape;
  for (int i = 0; i < a.ndim(); ++i) {
    if (i != ax1 && i != ax2) {
      shape.push_back(a.shape(i));
    }
  }
  shape.push_back(static_cast<int32_t>(std::max<int64_t>(len, 0)));
  return array(std::move(shape), a.dtype(),
               std::make_shared<Diagonal>(to_stream(s), offset, ax1, ax2), {a});
}

array diag(const array& a, int k, StreamOrDevice s) {
  if (a.ndim() == 2) {
    return diagonal(a, k, 0, 1, s);
  }
  if (a.ndim() != 1) {
    throw std::invalid_argument(
        msg("[diag] The input must be 1-D or 2-D; got shape ", a.shape(), "."));
  }
  // Written into the flat matrix: the k-th diagonal is every (N + 1)-th element from `first`.
  int64_t n = a.size();
  int64_t k64 = k;
  int32_t N = checked_dim(n + std::abs(k64), "diag");
  int32_t flat_size = checked_dim(static_cast<int64_t>(N) * N, "diag");
  array out = zeros({flat_size}, a.dtype(), s);
  if (n > 0) {
    int64_t first = k >= 0 ? k64 : -k64 * N;
    int64_t last = first + (n - 1) * (N + 1);
    out = slice_update(out, a, {static_cast<int32_t>(first)}, {static_cast<int32_t>(last + 1)},
                       {N + 1}, s);
  }
  return reshape(out, {N, N}, s);
}

std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse,
                            const std::string& indexing, StreamOrDevice s) {
  if (indexing != "xy" && indexing != "ij") {
    throw std::invalid_argument(
        msg("[meshgrid] Invalid indexing value \"", indexing, "\"; expected \"xy\" or \"ij\"."));
  }
  size_t n = arrays.size();
  bool swap = indexing == "xy" && n >= 2;
  std::vector<array> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Shape shape(n, 1);
    shape[swap && i < 2 ? 1 - i : i] = -1;
    out.push_back(reshape(arrays[i], std::move(shape), s));
  }
  return sparse ? out : broadcast_arrays(out, s);
}

array kron(const array& a, const array& b, StreamOrDevice s) {
  size_t nd = std::max(a.ndim(), b.ndim());
  Shape sa = left_pad_shape(a.shape(), nd);
  Shape sb = left_pad_shape(b.shape(), nd);
  // a as (a0, 1, a1, 1, ...) times b as (1, b0, 1, b1, ...), then merge the pairs.
  Shape ea, eb, out;
  for (size_t i = 0; i < nd; ++i) {
    ea.insert(ea.end(), {sa[i], 1});
    eb.insert(eb.end(), {1, sb[i]});
    out.push_back(checked_dim(static_cast<int64_t>(sa[i]) * sb[i], "kron"));
  }
  array prod = multiply(reshape(a, std::move(ea), s), reshape(b, std::move(eb), s), s);
  return reshape(prod, std::move(out), s);
}

array view(const array& a, const Dtype& dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) {
    return a;
  }
  Shape shape = a.shape();
  int in_size = static_cast<int>(a.itemsize());
  int out_size = size_of(dtype);
  if (in_size != out_size) {
    if (a.ndim() == 0) {
      throw std::invalid_argument(
          msg("[view] Changing the type of a scalar is only allowed for "
              "types with the same size; got ",
              a.dtype(), " to ", dtype, "."));
    }
    if (in_size > out_size) {
      shape.back() = checked_dim(static_cast<int64_t>(shape.back()) * (in_size / out_size), "view");
    } else if (shape.back() % (out_size / in_size) != 0) {
      throw std::invalid_argument(msg("[view] The last dimension of shape ", a.shape(), " of ",
                                      a.dtype(), " must be divisible by ", out_size / in_size,
                                      " to view it as ", dtype, "."));
    } else {
      shape.back() /= out_size / in_size;
    }
  }
  return array(std::move(shape), dtype, std::make_shared<View>(to_stream(s), dtype), {a});
}

namespace {

// Prepends 1s (and for atleast_3d of 1-D/2-D inputs, appends them) as NumPy does.
array at_least(const array& a, int nd, StreamOrDevice s) {
  if (a.ndim() >= nd) {
    return a;
  }
  Shape shape;
  if (nd == 3 && a.ndim() == 1) {
    shape = {1, a.shape(0), 1};
  } else if (nd == 3 && a.ndim() == 2) {
    shape = {a.shape(0), a.shape(1), 1};
  } else {
    shape = left_pad_shape(a.shape(), nd);
  }
  return reshape(a, std::move(shape), s);
}

std::vector<array> at_least(const std::vector<array>& arrays, int nd, StreamOrDevice s) {
  std::vector<array> out;
  out.reserve(arrays.size());
  for (auto& a : arrays) {
    out.push_back(at_least(a, nd, s));
  }
  return out;
}

}  // namespace

array atleast_1d(const array& a, StreamOrDevice s) { return at_least(a, 1, s); }
std::vector<array> atleast_1d(const std::vector<array>& a, StreamOrDevice s) {
  return at_least(a, 1, s);
}
array atleast_2d(const array& a, StreamOrDevice s) { return at_least(a, 2, s); }
std::vector<array> atleast_2d(const std::vector<array>& a, StreamOrDevice s) {
  return at_least(a, 2, s);
}
array atleast_3d(const array& a, StreamOrDevice s) { return at_least(a, 3, s); }
std::vector<array> atleast_3d(const std::vector<array>& a, StreamOrDevice s) {
  return at_least(a, 3, s);
}

}  // namespace mlx::core
