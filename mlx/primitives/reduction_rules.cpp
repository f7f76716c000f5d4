// Transform rules of the reduction primitives: Reduce, ArgReduce, Scan, Softmax, LogSumExp.
#include <algorithm>

#include "mlx/ops.h"
#include "mlx/primitives/reduction.h"

namespace mlx::core {

namespace {

array scalar(double v, Dtype dt) { return array(v, dt); }

bool is_half(Dtype t) { return t == float16 || t == bfloat16; }

Shape keepdims_shape(Shape shape, const std::vector<int>& axes) {
  for (int ax : axes) {
    shape[ax] = 1;
  }
  return shape;
}

// Axes of an unbatched operand renumbered for an input whose batch axis is `b`.
std::vector<int> shift_axes(std::vector<int> axes, int b) {
  for (int& ax : axes) {
    ax += ax >= b ? 1 : 0;
  }
  return axes;
}

// The public reduction behind a Reduce type, keeping the reduced axes.
array reduce_op(Reduce::ReduceType type, const array& x, const std::vector<int>& axes,
                StreamOrDevice s) {
  switch (type) {
    case Reduce::And:
      return all(x, axes, true, s);
    case Reduce::Or:
      return any(x, axes, true, s);
    case Reduce::Sum:
      return sum(x, axes, true, s);
    case Reduce::Prod:
      return prod(x, axes, true, s);
    case Reduce::Min:
      return min(x, axes, true, s);
    case Reduce::Max:
      break;
  }
  return max(x, axes, true, s);
}

// The public scan behind a Scan type.
array scan_op(Scan::ReduceType type, const array& x, int axis, bool reverse, bool inclusive,
              StreamOrDevice s) {
  switch (type) {
    case Scan::Max:
      return cummax(x, axis, reverse, inclusive, s);
    case Scan::Min:
      return cummin(x, axis, reverse, inclusive, s);
    case Scan::Sum:
      return cumsum(x, axis, reverse, inclusive, s);
    case Scan::Prod:
      return cumprod(x, axis, reverse, inclusive, s);
    case Scan::LogAddExp:
      break;
  }
  return logcumsumexp(x, axis, reverse, inclusive, s);
}

// `x` with the reduced `axes` moved last and flattened into one axis, and the way back.
struct Rows {
  array rows;             // (kept..., n)
  std::vector<int> perm;  // transposition applied to x
  Shape moved;            // x's shape after the transposition
};

Rows to_rows(const array& x, const std::vector<int>& axes, StreamOrDevice s) {
  std::vector<int> perm;
  Shape kept;
  for (int d = 0; d < x.ndim(); ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      perm.push_back(d);
      kept.push_back(x.shape(d));
    }
  }
  int32_t n = 1;
  for (int ax : axes) {
    perm.push_back(ax);
    n *= x.shape(ax);
  }
  array moved = transpose(x, perm, s);
  Shape rows_shape = kept;
  rows_shape.push_back(n);
  return {reshape(moved, rows_shape, s), perm, moved.shape()};
}

array from_rows(const array& r, const Rows& layout, StreamOrDevice s) {
  std::vector<int> inverse(layout.perm.size());
  for (size_t i = 0; i < layout.perm.size(); ++i) {
    inverse[layout.perm[i]] = static_cast<int>(i);
  }
  return transpose(reshape(r, layout.moved, s), inverse, s);
}

// d prod(row) / d row[k]: the product of the other elements, as exclusive cumulative products
// from both ends, so that zeros need no division.
array others_product(const array& rows, StreamOrDevice s) {
  return multiply(cumprod(rows, -1, false, false, s), cumprod(rows, -1, true, false, s), s);
}

// Weights of a min / max reduction's derivative: the positions equal to the result share it
// evenly (ties split the gradient, as in MLX).
array tie_weights(const array& x, const array& out, const std::vector<int>& axes,
                  StreamOrDevice s) {
  array mask = astype(equal(x, out, s), x.dtype(), s);
  return divide(mask, sum(mask, axes, true, s), s);
}

}  // namespace

// Reduce

std::vector<array> Reduce::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents, const std::vector<int>&) {
  const array& x = primals[0];
  const array& t = tangents[0];
  StreamOrDevice s = stream();
  switch (type_) {
    case And:
    case Or:
      return {zeros(keepdims_shape(x.shape(), axes_), bool_, s)};
    case Sum:
      return {sum(t, axes_, true, s)};
    case Prod: {
      Rows xr = to_rows(x, axes_, s);
      Rows tr = to_rows(t, axes_, s);
      array d = sum(multiply(others_product(xr.rows, s), tr.rows, s), -1, true, s);
      return {reshape(d, keepdims_shape(x.shape(), axes_), s)};
    }
    case Min:
    case Max:
      break;
  }
  array w = tie_weights(x, reduce_op(type_, x, axes_, s), axes_, s);
  return {sum(multiply(t, w, s), axes_, true, s)};
}

std::vector<array> Reduce::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents, const std::vector<int>&,
                               const std::vector<array>& outputs) {
  const array& x = primals[0];
  array g = astype(cotangents[0], x.dtype(), stream());
  StreamOrDevice s = stream();
  switch (type_) {
    case And:
    case Or:
      return {zeros_like(x, s)};
    case Sum:
      return {dynamic_broadcast({g, x}, s)};  // x's shape, also on a shapeless replay
    case Prod: {
      Rows xr = to_rows(x, axes_, s);
      Shape g_rows = xr.rows.shape();
      g_rows.back() = 1;
      array d = multiply(others_product(xr.rows, s), reshape(g, g_rows, s), s);
      return {from_rows(d, xr, s)};
    }
    case Min:
    case Max:
      break;
  }
  return {multiply(g, tie_weights(x, outputs[0], axes_, s), s)};
}

std::pair<std::vector<array>, std::vector<int>> Reduce::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  // Reduced axes keep their place, so the batch axis stays where it is.
  int b = axes[0];
  return {{reduce_op(type_, inputs[0], shift_axes(axes_, b), stream())}, {b}};
}

// ArgReduce: integer indices, no derivative.

std::vector<array> ArgReduce::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                  const std::vector<int>&) {
  return {zeros(keepdims_shape(primals[0].shape(), {axis_}), uint32, stream())};
}

std::vector<array> ArgReduce::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                  const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> ArgReduce::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  int b = axes[0];
  int axis = axis_ + (axis_ >= b ? 1 : 0);
  array out = type_ == ArgMax ? argmax(inputs[0], axis, true, stream())
                              : argmin(inputs[0], axis, true, stream());
  return {{out}, {b}};
}

// Scan

namespace {

// Pieces of the derivative of a cumulative product that stay exact with zeros. Before the
// first zero in scan order, d y_i / d x_k = y_i / x_k; at the first zero it is the scan of x
// with that zero replaced by one; after it, every product holds the first zero: nothing.
struct CumprodParts {
  array before;   // bool: before the first zero
  array first;    // bool: the first zero
  array divisor;  // x, with ones outside `before` (never zero)
  array y_first;  // the scan of x with the first zero replaced by one
};

CumprodParts cumprod_parts(const array& x, int axis, bool reverse, bool inclusive,
                           StreamOrDevice s) {
  Dtype dt = x.dtype();
  array is_zero = equal(x, scalar(0, dt), s);
  array zeros_so_far = cumsum(is_zero, axis, reverse, true, s);
  array before = equal(zeros_so_far, array(0, int32), s);
  array first = logical_and(is_zero, equal(zeros_so_far, array(1, int32), s), s);
  array one = scalar(1, dt);
  return {before, first, where(before, x, one, s),
          cumprod(where(first, one, x, s), axis, reverse, inclusive, s)};
}

// For each output of a cumulative max / min, the index along the axis of the input it
// equals: the latest one in scan order equal to the running extreme. `valid` is false
// where the output is the identity (the start of an exclusive scan, or after NaNs).
struct ScanSources {
  array index;  // int32, x's shape
  array valid;  // bool
};

ScanSources scan_sources(Scan::ReduceType type, const array& x, const array& y, int axis,
                         bool reverse, bool inclusive, StreamOrDevice s) {
  int32_t n = x.shape(axis);
  // The running extreme including each element.
  array running = inclusive ? y : (type == Scan::Max ? maximum(y, x, s) : minimum(y, x, s));
  Shape pos_shape(x.ndim(), 1);
  pos_shape[axis] = n;
  // Positions in scan order, so that a cumulative max finds the latest hit.
  array pos = reshape(reverse ? arange(n - 1, -1, -1, s) : arange(0, n, 1, s), pos_shape, s);
  array hits = where(equal(x, running, s), pos, array(-1, int32), s);
  array latest = cummax(hits, axis, reverse, inclusive, s);
  array valid = greater_equal(latest, array(0, int32), s);
  array index = reverse ? subtract(array(n - 1, int32), latest, s) : latest;
  return {where(valid, index, array(0, int32), s), valid};
}

// log(max(v, 0)), with the dtype's lowest value where v <= 0; built so that no log sees a
// non-positive value (its derivative stays finite for higher-order rules).
array log_positive(const array& v, StreamOrDevice s) {
  Dtype dt = v.dtype();
  array positive = greater(v, scalar(0, dt), s);
  return where(positive, log(where(positive, v, scalar(1, dt), s), s), scalar(finfo(dt).min, dt),
               s);
}

}  // namespace

std::vector<array> Scan::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  const array& x = primals[0];
  const array& t = tangents[0];
  StreamOrDevice s = stream();
  auto scan = [&](Scan::ReduceType type, const array& v) {
    return scan_op(type, v, axis_, reverse_, inclusive_, s);
  };
  switch (type_) {
    case Sum:
      return {scan(Sum, t)};
    case Prod: {
      auto p = cumprod_parts(x, axis_, reverse_, inclusive_, s);
      array zero = scalar(0, x.dtype());
      array from_nonzeros =
          multiply(scan(Prod, x), scan(Sum, where(p.before, divide(t, p.divisor, s), zero, s)), s);
      array from_first_zero = multiply(p.y_first, scan(Sum, where(p.first, t, zero, s)), s);
      return {add(from_nonzeros, from_first_zero, s)};
    }
    case Max:
    case Min: {
      auto src = scan_sources(type_, x, scan(type_, x), axis_, reverse_, inclusive_, s);
      return {where(src.valid, take_along_axis(t, src.index, axis_, s), scalar(0, t.dtype()), s)};
    }
    case LogAddExp:
      break;
  }
  // dy_i = sum_k t_k exp(x_k - y_i), split by the sign of t and summed in log space.
  array y = scan(LogAddExp, x);
  array y_floor = maximum(y, scalar(finfo(y.dtype()).min, y.dtype()), s);
  auto part = [&](const array& v) {
    return exp(subtract(scan(LogAddExp, add(x, log_positive(v, s), s)), y_floor, s), s);
  };
  return {subtract(part(t), part(negative(t, s)), s)};
}

std::vector<array> Scan::vjp(const std::vector<array>& primals,
                             const std::vector<array>& cotangents, const std::vector<int>&,
                             const std::vector<array>& outputs) {
  const array& x = primals[0];
  const array& y = outputs[0];
  StreamOrDevice s = stream();
  array g = astype(cotangents[0], x.dtype(), s);
  // Sums of cotangents over the outputs each input reaches: a scan the other way round.
  auto back_sum = [&](const array& v) { return cumsum(v, axis_, !reverse_, inclusive_, s); };
  switch (type_) {
    case Sum:
      return {back_sum(g)};
    case Prod: {
      auto p = cumprod_parts(x, axis_, reverse_, inclusive_, s);
      array zero = scalar(0, x.dtype());
      array at_first_zero = where(p.first, back_sum(multiply(g, p.y_first, s)), zero, s);
      return {where(p.before, divide(back_sum(multiply(g, y, s)), p.divisor, s), at_first_zero, s)};
    }
    case Max:
    case Min: {
      auto src = scan_sources(type_, x, y, axis_, reverse_, inclusive_, s);
      array routed = where(src.valid, g, scalar(0, g.dtype()), s);
      return {scatter_add_axis(zeros_like(x, s), src.index, routed, axis_, s)};
    }
    case LogAddExp:
      break;
  }
  // dx_k = sum_i g_i exp(x_k - y_i), split by the sign of g and summed in log space.
  array y_floor = maximum(y, scalar(finfo(y.dtype()).min, y.dtype()), s);
  auto part = [&](const array& v) {
    array terms = subtract(log_positive(v, s), y_floor, s);
    return exp(add(x, logcumsumexp(terms, axis_, !reverse_, inclusive_, s), s), s);
  };
  return {subtract(part(g), part(negative(g, s)), s)};
}

std::pair<std::vector<array>, std::vector<int>> Scan::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  int b = axes[0];
  int axis = axis_ + (axis_ >= b ? 1 : 0);
  return {{scan_op(type_, inputs[0], axis, reverse_, inclusive_, stream())}, {b}};
}

// Softmax (last axis)

namespace {

// y * (v - sum(v * y)) over the last axis: the Jacobian of softmax applied to v (it is
// symmetric, so this serves both modes). 16-bit floats compute in float32, as the kernel does.
array softmax_jacobian_product(const array& y, const array& v, StreamOrDevice s) {
  Dtype dt = y.dtype();
  Dtype ct = is_half(dt) ? float32 : dt;
  array yc = astype(y, ct, s);
  array vc = astype(v, ct, s);
  array centered = subtract(vc, sum(multiply(vc, yc, s), -1, true, s), s);
  return astype(multiply(yc, centered, s), dt, s);
}

// The mapped input of a last-axis rule, with the batch axis off the last axis.
std::pair<array, int> batch_off_last(const array& x, int b, StreamOrDevice s) {
  if (b == x.ndim() - 1) {
    return {moveaxis(x, b, 0, s), 0};
  }
  return {x, b};
}

}  // namespace

std::vector<array> Softmax::jvp(const std::vector<array>& primals,
                                const std::vector<array>& tangents, const std::vector<int>&) {
  array y = softmax(primals[0], -1, precise_, stream());
  return {softmax_jacobian_product(y, tangents[0], stream())};
}

std::vector<array> Softmax::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                const std::vector<int>&, const std::vector<array>& outputs) {
  return {softmax_jacobian_product(outputs[0], cotangents[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> Softmax::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  auto [x, b] = batch_off_last(inputs[0], axes[0], stream());
  return {{softmax(x, -1, precise_, stream())}, {b}};
}

// LogSumExp (last axis, kept as size 1): the derivative is softmax = exp(x - out).

std::vector<array> LogSumExp::jvp(const std::vector<array>& primals,
                                  const std::vector<array>& tangents, const std::vector<int>&) {
  StreamOrDevice s = stream();
  const array& x = primals[0];
  array weights = exp(subtract(x, logsumexp(x, -1, true, s), s), s);
  return {sum(multiply(tangents[0], weights, s), -1, true, s)};
}

std::vector<array> LogSumExp::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>& outputs) {
  StreamOrDevice s = stream();
  array weights = exp(subtract(primals[0], outputs[0], s), s);
  return {multiply(cotangents[0], weights, s)};
}

std::pair<std::vector<array>, std::vector<int>> LogSumExp::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  auto [x, b] = batch_off_last(inputs[0], axes[0], stream());
  return {{logsumexp(x, -1, true, stream())}, {b}};
}

}  // namespace mlx::core
