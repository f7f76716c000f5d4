#include "mlx/ops/shape.h"

#include <algorithm>
#include <numeric>

#include "mlx/ops/creation.h"
#include "mlx/primitives/shape.h"
#include "mlx/utils.h"

namespace mlx::core {

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s) {
  if (a.shape() == shape) {
    return a;
  }
  Shape out = broadcast_shapes(a.shape(), shape, "broadcast_to");
  if (out != shape) {
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
  for (auto& in : inputs) {
    out.push_back(broadcast_to(in, shape, s));
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
  if (shape == a.shape()) {
    return a;
  }
  auto p = std::make_shared<Reshape>(to_stream(s), shape);
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
  return reshape(a, std::move(shape), s);
}

array squeeze(const array& a, int axis, StreamOrDevice s) {
  return squeeze(a, std::vector<int>{axis}, s);
}

array squeeze(const array& a, StreamOrDevice s) {
  Shape shape;
  for (auto d : a.shape()) {
    if (d != 1) {
      shape.push_back(d);
    }
  }
  return reshape(a, std::move(shape), s);
}

array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  int out_nd = a.ndim() + static_cast<int>(axes.size());
  auto ax = normalize_axes(axes, out_nd, "expand_dims");
  std::sort(ax.begin(), ax.end());
  Shape shape = a.shape();
  for (int axis : ax) {
    shape.insert(shape.begin() + axis, 1);
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
  int nd = a.ndim();
  if (static_cast<int>(start.size()) != nd || static_cast<int>(stop.size()) != nd ||
      static_cast<int>(strides.size()) != nd) {
    throw std::invalid_argument(
        msg("[slice] Invalid number of indices or strides for array with ", nd, " dimensions."));
  }
  Shape shape(nd);
  bool identity = true;
  for (int i = 0; i < nd; ++i) {
    int64_t n = a.shape(i);
    int64_t st = strides[i];
    if (st == 0) {
      throw std::invalid_argument("[slice] Slice step cannot be zero.");
    }
    // Python slice clamping.
    auto clamp = [&](int64_t v, bool is_start) -> int64_t {
      if (v < 0)
        v += n;
      if (st > 0)
        return std::clamp<int64_t>(v, 0, n);
      return std::clamp<int64_t>(v, -1, n - 1);
    };
    int64_t b = clamp(start[i], true);
    int64_t e = clamp(stop[i], false);
    int64_t len =
        st > 0 ? (e > b ? (e - b + st - 1) / st : 0) : (b > e ? (b - e - st - 1) / (-st) : 0);
    start[i] = static_cast<int32_t>(len > 0 ? b : 0);
    stop[i] = static_cast<int32_t>(e);
    shape[i] = static_cast<int32_t>(len);
    identity &= start[i] == 0 && st == 1 && len == n;
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
  a = contiguous(std::move(a), false, s);
  auto p = std::make_shared<AsStrided>(to_stream(s), shape, std::move(strides), offset);
  Dtype dt = a.dtype();
  return array(std::move(shape), dt, std::move(p), {std::move(a)});
}

}  // namespace mlx::core
