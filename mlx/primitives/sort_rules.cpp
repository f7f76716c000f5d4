// Transform rules of the sorting primitives. Sort and Partition permute each lane, so their
// derivatives move (co)tangents with the permutation, recomputed from the input; ArgSort and
// ArgPartition give integers and have zero derivatives.
#include "mlx/ops.h"
#include "mlx/primitives/indexing.h"

namespace mlx::core {

namespace {

array sort_op(SortKind kind, const array& x, int axis, int kth, Stream s) {
  switch (kind) {
    case SortKind::Sort:
      return sort(x, axis, s);
    case SortKind::ArgSort:
      return argsort(x, axis, s);
    case SortKind::Partition:
      return partition(x, kth, axis, s);
    case SortKind::ArgPartition:
      return argpartition(x, kth, axis, s);
  }
  throw std::logic_error("[sort] Unknown sort kind.");
}

bool is_arg(SortKind kind) { return kind == SortKind::ArgSort || kind == SortKind::ArgPartition; }

// q with q[p[j]] = j along `axis`, for a permutation p of each lane.
array inverse_permutation(const array& p, int axis, Stream s) {
  Shape shape(p.ndim(), 1);
  shape[axis] = p.shape(axis);
  array positions = reshape(arange(0.0, p.shape(axis), 1.0, uint32, s), shape, s);
  return put_along_axis(broadcast_to(array(0, uint32), p.shape(), s), p, positions, axis, s);
}

// p with out = take_along_axis(x, p, axis), where `out` is x sorted (kind Sort) or partitioned
// along `axis` by the forward kernel.
array source_positions(SortKind kind, const array& x, const array& out, int axis, Stream s) {
  array order = argsort(x, axis, s);  // stable, so it arranges ties as sort does
  if (kind == SortKind::Sort) {
    return order;
  }
  // A partition orders each side of kth in its own way: out[j] is the value of sorted rank
  // r = rank of out[j] among out, which is x[order[r]].
  array rank = inverse_permutation(argsort(out, axis, s), axis, s);
  return take_along_axis(order, rank, axis, s);
}

}  // namespace

std::vector<array> SortAlongAxis::jvp(const std::vector<array>& primals,
                                      const std::vector<array>& tangents, const std::vector<int>&) {
  const array& x = primals[0];
  if (is_arg(kind_)) {
    return {zeros(x.shape(), uint32, stream())};
  }
  // A partition's arrangement comes from the kernel, so it is recomputed (O(n), like the
  // forward); sort needs no output.
  array out = kind_ == SortKind::Partition ? partition(x, kth_, axis_, stream()) : x;
  return {take_along_axis(tangents[0], source_positions(kind_, x, out, axis_, stream()), axis_,
                          stream())};
}

std::vector<array> SortAlongAxis::vjp(const std::vector<array>& primals,
                                      const std::vector<array>& cotangents, const std::vector<int>&,
                                      const std::vector<array>& outputs) {
  const array& x = primals[0];
  if (is_arg(kind_)) {
    return {zeros_like(x, stream())};
  }
  array p = source_positions(kind_, x, outputs[0], axis_, stream());
  const array& cot = cotangents[0];
  return {scatter_add_axis(broadcast_to(array(0, cot.dtype()), x.shape(), stream()), p, cot, axis_,
                           stream())};
}

std::pair<std::vector<array>, std::vector<int>> SortAlongAxis::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  int b = axes[0];
  int axis = axis_ >= b ? axis_ + 1 : axis_;
  return {{sort_op(kind_, inputs[0], axis, kth_, stream())}, {b}};
}

}  // namespace mlx::core
