#include "mlx/ops/indexing.h"

#include <numeric>

#include "mlx/ops/creation.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/indexing.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

void check_index_dtype(const array& indices, const char* op) {
  if (indices.dtype() == bool_ || !is_integral(indices.dtype())) {
    throw std::invalid_argument(
        msg("[", op, "] Indices must have an integer dtype; got ", indices.dtype(), "."));
  }
}

// Validates index arrays against their axes and broadcasts them to one shape.
std::vector<int> check_indices(const array& a, const std::vector<array>& indices,
                               const std::vector<int>& axes, const char* op) {
  if (indices.size() != axes.size()) {
    throw std::invalid_argument(msg("[", op, "] Got ", indices.size(), " index arrays for ",
                                    axes.size(), " axes; they must match."));
  }
  for (auto& idx : indices) {
    check_index_dtype(idx, op);
  }
  return normalize_axes(axes, a.ndim(), op);
}

std::vector<array> broadcast_indices(const std::vector<array>& indices, Shape& index_shape,
                                     const char* op, StreamOrDevice s) {
  std::vector<Shape> shapes;
  for (auto& idx : indices) {
    shapes.push_back(idx.shape());
  }
  index_shape = broadcast_shapes(shapes, op);
  std::vector<array> out;
  for (auto& idx : indices) {
    out.push_back(broadcast_to(idx, index_shape, s));
  }
  return out;
}

array gather_impl(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
                  const Shape& slice_sizes, const char* op, StreamOrDevice s) {
  auto ax = check_indices(a, indices, axes, op);
  if (static_cast<int>(slice_sizes.size()) != a.ndim()) {
    throw std::invalid_argument(msg("[", op, "] Got slice sizes ", slice_sizes,
                                    " for an array of shape ", a.shape(),
                                    "; need one size per dimension."));
  }
  for (int i = 0; i < a.ndim(); ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > a.shape(i)) {
      throw std::invalid_argument(msg("[", op, "] Slice size ", slice_sizes[i],
                                      " is invalid for axis ", i, " of size ", a.shape(i), "."));
    }
  }
  Shape shape;
  std::vector<array> inputs{a};
  for (auto& idx : broadcast_indices(indices, shape, op, s)) {
    inputs.push_back(std::move(idx));
  }
  shape.insert(shape.end(), slice_sizes.begin(), slice_sizes.end());
  return array(std::move(shape), a.dtype(),
               std::make_shared<Gather>(to_stream(s), ax, slice_sizes, op), std::move(inputs));
}

array scatter_impl(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, ScatterReduce reduce, const char* op,
                   StreamOrDevice s) {
  auto ax = check_indices(a, indices, axes, op);
  Shape index_shape;
  std::vector<array> inputs{a};
  for (auto& idx : broadcast_indices(indices, index_shape, op, s)) {
    inputs.push_back(std::move(idx));
  }
  int nd_index = static_cast<int>(index_shape.size());
  if (updates.ndim() != nd_index + a.ndim()) {
    throw std::invalid_argument(msg("[", op, "] Updates of shape ", updates.shape(), " must have ",
                                    nd_index + a.ndim(), " dimensions: the index shape ",
                                    index_shape,
                                    " followed by one slice dimension per dimension of ",
                                    "the array of shape ", a.shape(), "."));
  }
  Shape lead(updates.shape().begin(), updates.shape().begin() + nd_index);
  Shape slice(updates.shape().begin() + nd_index, updates.shape().end());
  for (int i = 0; i < a.ndim(); ++i) {
    if (slice[i] > a.shape(i)) {
      throw std::invalid_argument(msg("[", op, "] Update slices of shape ", slice,
                                      " do not fit in the array of shape ", a.shape(), "."));
    }
  }
  if (broadcast_shapes(lead, index_shape, op) != index_shape) {
    throw std::invalid_argument(msg("[", op, "] Updates of shape ", updates.shape(),
                                    " do not match the index shape ", index_shape, "."));
  }
  Shape update_shape = index_shape;
  update_shape.insert(update_shape.end(), slice.begin(), slice.end());
  inputs.push_back(
      contiguous(broadcast_to(astype(updates, a.dtype(), s), update_shape, s), false, s));
  return array(a.shape(), a.dtype(), std::make_shared<Scatter>(to_stream(s), reduce, ax),
               std::move(inputs));
}

// Checks `indices` for a *_along_axis op and returns the normalized axis.
int check_along_axis(const array& a, const array& indices, int axis, const char* op) {
  check_index_dtype(indices, op);
  if (indices.ndim() != a.ndim()) {
    throw std::invalid_argument(msg("[", op, "] Indices of shape ", indices.shape(),
                                    " must have as many dimensions as the array of shape ",
                                    a.shape(), "."));
  }
  return normalize_axis(axis, a.ndim(), op);
}

array scatter_axis_impl(const array& a, const array& indices, const array& values, int axis,
                        ScatterReduce reduce, const char* op, StreamOrDevice s) {
  axis = check_along_axis(a, indices, axis, op);
  Shape shape = a.shape();
  shape[axis] = indices.shape(axis);
  if (broadcast_shapes(indices.shape(), shape, op) != shape) {
    throw std::invalid_argument(msg("[", op, "] Indices of shape ", indices.shape(),
                                    " do not broadcast with the array of shape ", a.shape(),
                                    " outside axis ", axis, "."));
  }
  if (broadcast_shapes(values.shape(), shape, op) != shape) {
    throw std::invalid_argument(msg("[", op, "] Values of shape ", values.shape(),
                                    " cannot be broadcast to the indices' shape ", shape, "."));
  }
  array idx = contiguous(broadcast_to(indices, shape, s), false, s);
  array vals = contiguous(broadcast_to(astype(values, a.dtype(), s), shape, s), false, s);
  return array(a.shape(), a.dtype(), std::make_shared<ScatterAxis>(to_stream(s), reduce, axis),
               {a, std::move(idx), std::move(vals)});
}

array sort_impl(const array& a, SortKind kind, int axis, int kth, const char* op,
                StreamOrDevice s) {
  axis = normalize_axis(axis, a.ndim(), op);
  if (kind == SortKind::Partition || kind == SortKind::ArgPartition) {
    int n = a.shape(axis);
    if (kth < -n || kth >= n) {
      throw std::out_of_range(
          msg("[", op, "] kth ", kth, " is out of bounds for axis ", axis, " of size ", n, "."));
    }
    kth = kth < 0 ? kth + n : kth;
  }
  bool arg = kind == SortKind::ArgSort || kind == SortKind::ArgPartition;
  return array(a.shape(), arg ? uint32 : a.dtype(),
               std::make_shared<SortAlongAxis>(to_stream(s), kind, axis, kth), {a});
}

}  // namespace

array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
             const Shape& slice_sizes, StreamOrDevice s) {
  return gather_impl(a, indices, axes, slice_sizes, "gather", s);
}

array scatter(const array& a, const std::vector<array>& indices, const array& updates,
              const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterReduce::None, "scatter", s);
}
array scatter_add(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterReduce::Sum, "scatter_add", s);
}
array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterReduce::Prod, "scatter_prod", s);
}
array scatter_max(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterReduce::Max, "scatter_max", s);
}
array scatter_min(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterReduce::Min, "scatter_min", s);
}

array take(const array& a, const array& indices, int axis, StreamOrDevice s) {
  check_index_dtype(indices, "take");
  axis = normalize_axis(axis, a.ndim(), "take");
  if (a.shape(axis) == 0 && indices.size() > 0) {
    throw std::out_of_range(
        msg("[take] Cannot take ", indices.size(), " indices from axis ", axis, " of size 0."));
  }
  Shape slice_sizes = a.shape();
  slice_sizes[axis] = std::min(1, a.shape(axis));
  // Gather gives indices.shape + a.shape with a 1 at `axis`; drop it and move the index
  // dimensions to where `axis` was.
  array g = gather_impl(a, {indices}, {axis}, slice_sizes, "take", s);
  int k = indices.ndim();
  Shape shape = indices.shape();
  for (int i = 0; i < a.ndim(); ++i) {
    if (i != axis) {
      shape.push_back(a.shape(i));
    }
  }
  g = reshape(g, std::move(shape), s);
  if (axis == 0 || k == 0) {
    return g;
  }
  std::vector<int> perm(g.ndim());
  std::iota(perm.begin(), perm.begin() + axis, k);
  std::iota(perm.begin() + axis, perm.begin() + axis + k, 0);
  std::iota(perm.begin() + axis + k, perm.end(), k + axis);
  return transpose(g, std::move(perm), s);
}

array take(const array& a, const array& indices, StreamOrDevice s) {
  return take(flatten(a, s), indices, 0, s);
}

array take(const array& a, int index, int axis, StreamOrDevice s) {
  axis = normalize_axis(axis, a.ndim(), "take");
  int n = a.shape(axis);
  if (index < -n || index >= n) {
    throw std::out_of_range(
        msg("[take] Index ", index, " is out of bounds for axis ", axis, " with size ", n, "."));
  }
  index = index < 0 ? index + n : index;
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  start[axis] = index;
  stop[axis] = index + 1;
  return squeeze(slice(a, std::move(start), std::move(stop), s), axis, s);
}

array take(const array& a, int index, StreamOrDevice s) { return take(flatten(a, s), index, 0, s); }

array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s) {
  axis = check_along_axis(a, indices, axis, "take_along_axis");
  Shape a_shape = a.shape();
  Shape i_shape = indices.shape();
  a_shape[axis] = 1;
  i_shape[axis] = 1;
  Shape shape = broadcast_shapes(a_shape, i_shape, "take_along_axis");
  a_shape = shape;
  a_shape[axis] = a.shape(axis);
  shape[axis] = indices.shape(axis);
  array src = broadcast_to(a, a_shape, s);
  array idx = broadcast_to(indices, shape, s);
  return array(std::move(shape), a.dtype(), std::make_shared<GatherAxis>(to_stream(s), axis),
               {std::move(src), std::move(idx)});
}

array put_along_axis(const array& a, const array& indices, const array& values, int axis,
                     StreamOrDevice s) {
  return scatter_axis_impl(a, indices, values, axis, ScatterReduce::None, "put_along_axis", s);
}

array scatter_add_axis(const array& a, const array& indices, const array& values, int axis,
                       StreamOrDevice s) {
  return scatter_axis_impl(a, indices, values, axis, ScatterReduce::Sum, "scatter_add_axis", s);
}

array sort(const array& a, StreamOrDevice s) { return sort(flatten(a, s), 0, s); }
array sort(const array& a, int axis, StreamOrDevice s) {
  return sort_impl(a, SortKind::Sort, axis, 0, "sort", s);
}
array argsort(const array& a, StreamOrDevice s) { return argsort(flatten(a, s), 0, s); }
array argsort(const array& a, int axis, StreamOrDevice s) {
  return sort_impl(a, SortKind::ArgSort, axis, 0, "argsort", s);
}
array partition(const array& a, int kth, StreamOrDevice s) {
  return partition(flatten(a, s), kth, 0, s);
}
array partition(const array& a, int kth, int axis, StreamOrDevice s) {
  return sort_impl(a, SortKind::Partition, axis, kth, "partition", s);
}
array argpartition(const array& a, int kth, StreamOrDevice s) {
  return argpartition(flatten(a, s), kth, 0, s);
}
array argpartition(const array& a, int kth, int axis, StreamOrDevice s) {
  return sort_impl(a, SortKind::ArgPartition, axis, kth, "argpartition", s);
}

array topk(const array& a, int k, StreamOrDevice s) { return topk(flatten(a, s), k, 0, s); }
array topk(const array& a, int k, int axis, StreamOrDevice s) {
  axis = normalize_axis(axis, a.ndim(), "topk");
  int n = a.shape(axis);
  if (k < 0 || k > n) {
    throw std::invalid_argument(
        msg("[topk] k must be in [0, ", n, "] for axis ", axis, " of size ", n, "; got ", k, "."));
  }
  if (k == n && !detail::in_shapeless_tracing()) {  // k may be less than a replay's n
    return a;
  }
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  start[axis] = n - k;
  // Partitioning at n - k puts the k largest last.
  array p = k == 0 ? a : partition(a, n - k, axis, s);
  return slice(p, std::move(start), std::move(stop), s);
}

}  // namespace mlx::core
