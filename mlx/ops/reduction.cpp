#include "mlx/ops/reduction.h"

#include <algorithm>
#include <numeric>

#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/graph.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/reduction.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

std::vector<int> all_axes(const array& a) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

// Validated (in range, no duplicates), non-negative, sorted.
std::vector<int> sorted_axes(const array& a, const std::vector<int>& axes, const char* name) {
  auto ax = normalize_axes(axes, a.ndim(), name);
  std::sort(ax.begin(), ax.end());
  return ax;
}

Shape keepdims_shape(const array& a, const std::vector<int>& axes) {
  Shape shape = a.shape();
  for (int ax : axes) {
    shape[ax] = 1;
  }
  return shape;
}

int64_t reduced_size(const array& a, const std::vector<int>& axes) {
  int64_t n = 1;
  for (int ax : axes) {
    n *= a.shape(ax);
  }
  return n;
}

array drop_axes(const array& out, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  return keepdims || axes.empty() ? out : squeeze(out, axes, s);
}

// The Reduce primitive over sorted axes, or a conversion when every reduced axis has size 1
// (never in a shapeless trace: those axes may be longer when it is replayed).
array reduce(const array& a, Reduce::ReduceType type, const std::vector<int>& axes, bool keepdims,
             Dtype out_dtype, StreamOrDevice s) {
  bool noop = !detail::in_shapeless_tracing() &&
              std::all_of(axes.begin(), axes.end(), [&](int ax) { return a.shape(ax) == 1; });
  array out = noop ? astype(a, out_dtype, s)
                   : array(keepdims_shape(a, axes), out_dtype,
                           std::make_shared<Reduce>(to_stream(s), type, axes), {a});
  return drop_axes(out, axes, keepdims, s);
}

// MLX's sum / prod output dtype: small integers and bool widen to 32 bits.
Dtype widened(Dtype t) {
  if (t == bool_ || t == int8 || t == int16) {
    return int32;
  }
  if (t == uint8 || t == uint16) {
    return uint32;
  }
  return t;
}

void check_not_empty(const array& a, const std::vector<int>& axes, const char* name) {
  for (int ax : axes) {
    if (a.shape(ax) == 0) {
      throw std::invalid_argument(msg("[", name, "] Cannot ", name,
                                      " reduce zero size array (axis ", ax, " of shape ", a.shape(),
                                      ")."));
    }
  }
}

void check_not_complex(const array& a, const char* name) {
  if (is_complex(a.dtype())) {
    throw std::invalid_argument(msg("[", name, "] Not supported for complex inputs."));
  }
}

bool is_half(Dtype t) { return t == float16 || t == bfloat16; }

// Moves `axes` (sorted) to the end of a row-contiguous copy flattened to (kept..., reduced),
// so that a last-axis kernel can process them. perm receives the transposition applied.
array move_axes_last(const array& a, const std::vector<int>& axes, std::vector<int>& perm,
                     StreamOrDevice s) {
  perm.clear();
  Shape shape;
  for (int d = 0; d < a.ndim(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), d)) {
      perm.push_back(d);
      shape.push_back(a.shape(d));
    }
  }
  perm.insert(perm.end(), axes.begin(), axes.end());
  bool identity = std::is_sorted(perm.begin(), perm.end());
  array x = contiguous(identity ? a : transpose(a, perm, s), false, s);
  shape.push_back(static_cast<int32_t>(reduced_size(a, axes)));
  return reshape(x, shape, s);
}

}  // namespace

// Defines the all-axes and single-axis overloads in terms of the axes-list one.
#define MLX_REDUCTION_FORWARDS(NAME)                                      \
  array NAME(const array& a, bool keepdims, StreamOrDevice s) {           \
    return NAME(a, all_axes(a), keepdims, s);                             \
  }                                                                       \
  array NAME(const array& a, int axis, bool keepdims, StreamOrDevice s) { \
    return NAME(a, std::vector<int>{axis}, keepdims, s);                  \
  }

MLX_REDUCTION_FORWARDS(all)
MLX_REDUCTION_FORWARDS(any)
MLX_REDUCTION_FORWARDS(sum)
MLX_REDUCTION_FORWARDS(prod)
MLX_REDUCTION_FORWARDS(max)
MLX_REDUCTION_FORWARDS(min)
MLX_REDUCTION_FORWARDS(mean)
MLX_REDUCTION_FORWARDS(logsumexp)
#undef MLX_REDUCTION_FORWARDS

array all(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  return reduce(a, Reduce::And, sorted_axes(a, axes, "all"), keepdims, bool_, s);
}

array any(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  return reduce(a, Reduce::Or, sorted_axes(a, axes, "any"), keepdims, bool_, s);
}

array sum(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  return reduce(a, Reduce::Sum, sorted_axes(a, axes, "sum"), keepdims, widened(a.dtype()), s);
}

array prod(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  return reduce(a, Reduce::Prod, sorted_axes(a, axes, "prod"), keepdims, widened(a.dtype()), s);
}

array max(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto ax = sorted_axes(a, axes, "max");
  check_not_empty(a, ax, "max");
  return reduce(a, Reduce::Max, ax, keepdims, a.dtype(), s);
}

array min(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto ax = sorted_axes(a, axes, "min");
  check_not_empty(a, ax, "min");
  return reduce(a, Reduce::Min, ax, keepdims, a.dtype(), s);
}

array mean(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto ax = sorted_axes(a, axes, "mean");
  Dtype dt = at_least_float(a.dtype());
  // 16-bit floats keep the float32 sum so that the division rounds once.
  array total = reduce(a, Reduce::Sum, ax, keepdims, is_half(dt) ? float32 : widened(a.dtype()), s);
  Dtype scale_dt = dt == float64 ? float64 : float32;
  array inv = number_of_elements(a, ax, true, scale_dt, s);
  return astype(multiply(total, inv, s), dt, s);
}

array var(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  auto ax = sorted_axes(a, axes, "var");
  check_not_complex(a, "var");
  Dtype dt = at_least_float(a.dtype());
  // Two passes (mean, then squared deviations) for accuracy; 16-bit floats in float32.
  array x = astype(a, is_half(dt) ? float32 : dt, s);
  array dev = subtract(x, mean(x, ax, true, s), s);
  array ss = sum(square(dev, s), ax, keepdims, s);
  array dof(std::max<double>(static_cast<double>(reduced_size(a, ax)) - ddof, 0.0), x.dtype());
  if (detail::in_shapeless_tracing()) {
    array count = number_of_elements(a, ax, false, x.dtype(), s);
    dof = maximum(subtract(count, array(ddof, x.dtype()), s), array(0, x.dtype()), s);
  }
  return astype(divide(ss, dof, s), dt, s);
}

array std(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  return sqrt(var(a, axes, keepdims, ddof, s), s);
}

array var(const array& a, bool keepdims, int ddof, StreamOrDevice s) {
  return var(a, all_axes(a), keepdims, ddof, s);
}
array var(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return var(a, std::vector<int>{axis}, keepdims, ddof, s);
}
array std(const array& a, bool keepdims, int ddof, StreamOrDevice s) {
  return std(a, all_axes(a), keepdims, ddof, s);
}
array std(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return std(a, std::vector<int>{axis}, keepdims, ddof, s);
}

array logsumexp(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto ax = sorted_axes(a, axes, "logsumexp");
  check_not_complex(a, "logsumexp");
  Dtype dt = at_least_float(a.dtype());
  array x = astype(a, dt, s);
  if (ax.empty()) {
    return x;
  }
  std::vector<int> perm;
  array rows = move_axes_last(x, ax, perm, s);
  Shape kept(rows.shape().begin(), rows.shape().end() - 1);
  Shape out_shape = kept;
  out_shape.push_back(1);
  array out(out_shape, dt, std::make_shared<LogSumExp>(to_stream(s)), {rows});
  return reshape(out, keepdims ? keepdims_shape(a, ax) : kept, s);
}

namespace {

array arg_reduce(const array& a, ArgReduce::ReduceType type, int axis, bool keepdims,
                 const char* name, StreamOrDevice s) {
  axis = normalize_axis(axis, a.ndim(), name);
  if (a.shape(axis) == 0) {
    throw std::invalid_argument(msg("[", name, "] Cannot ", name, " reduce zero size array (axis ",
                                    axis, " of shape ", a.shape(), ")."));
  }
  array out(keepdims_shape(a, {axis}), uint32,
            std::make_shared<ArgReduce>(to_stream(s), type, axis), {a});
  return keepdims ? out : squeeze(out, axis, s);
}

array arg_reduce_all(const array& a, ArgReduce::ReduceType type, bool keepdims, const char* name,
                     StreamOrDevice s) {
  if (a.size() == 0) {
    throw std::invalid_argument(
        msg("[", name, "] Cannot ", name, " reduce zero size array (shape ", a.shape(), ")."));
  }
  array out = arg_reduce(reshape(a, {-1}, s), type, 0, true, name, s);
  return reshape(out, keepdims ? Shape(a.ndim(), 1) : Shape{}, s);
}

}  // namespace

array argmax(const array& a, bool keepdims, StreamOrDevice s) {
  return arg_reduce_all(a, ArgReduce::ArgMax, keepdims, "argmax", s);
}
array argmax(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, ArgReduce::ArgMax, axis, keepdims, "argmax", s);
}
array argmin(const array& a, bool keepdims, StreamOrDevice s) {
  return arg_reduce_all(a, ArgReduce::ArgMin, keepdims, "argmin", s);
}
array argmin(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, ArgReduce::ArgMin, axis, keepdims, "argmin", s);
}

namespace {

array scan(const array& a, Scan::ReduceType type, int axis, bool reverse, bool inclusive,
           Dtype out_dtype, const char* name, StreamOrDevice s) {
  axis = normalize_axis(axis, a.ndim(), name);
  // Booleans are summed by the kernel straight into int32; other inputs are converted first.
  bool bool_sum = a.dtype() == bool_ && out_dtype == int32;
  array x = astype(a, bool_sum ? bool_ : out_dtype, s);
  return array(a.shape(), out_dtype,
               std::make_shared<Scan>(to_stream(s), type, axis, reverse, inclusive), {x});
}

}  // namespace

array cumsum(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  Dtype t = a.dtype() == bool_ ? int32 : a.dtype();
  return scan(a, Scan::Sum, axis, reverse, inclusive, t, "cumsum", s);
}
array cumprod(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, Scan::Prod, axis, reverse, inclusive, a.dtype(), "cumprod", s);
}
array cummax(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, Scan::Max, axis, reverse, inclusive, a.dtype(), "cummax", s);
}
array cummin(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, Scan::Min, axis, reverse, inclusive, a.dtype(), "cummin", s);
}
array logcumsumexp(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  check_not_complex(a, "logcumsumexp");
  return scan(a, Scan::LogAddExp, axis, reverse, inclusive, at_least_float(a.dtype()),
              "logcumsumexp", s);
}

array softmax(const array& a, const std::vector<int>& axes, bool precise, StreamOrDevice s) {
  auto ax = sorted_axes(a, axes, "softmax");
  check_not_complex(a, "softmax");
  Dtype dt = at_least_float(a.dtype());
  std::vector<int> perm;
  array rows = move_axes_last(astype(a, dt, s), ax, perm, s);
  array out(rows.shape(), dt, std::make_shared<Softmax>(to_stream(s), precise), {rows});
  // Undo the flattening and the transposition.
  Shape moved;
  for (int d : perm) {
    moved.push_back(a.shape(d));
  }
  out = reshape(out, moved, s);
  if (std::is_sorted(perm.begin(), perm.end())) {
    return out;
  }
  std::vector<int> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    inverse[perm[i]] = static_cast<int>(i);
  }
  return transpose(out, inverse, s);
}

array softmax(const array& a, bool precise, StreamOrDevice s) {
  return softmax(a, all_axes(a), precise, s);
}

array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s) {
  if (a.shape() != b.shape()) {
    return array(false);
  }
  array eq = equal(a, b, s);
  if (equal_nan && is_inexact(promote_types(a.dtype(), b.dtype()))) {
    eq = logical_or(eq, logical_and(isnan(a, s), isnan(b, s), s), s);
  }
  return all(eq, false, s);
}

array allclose(const array& a, const array& b, double rtol, double atol, bool equal_nan,
               StreamOrDevice s) {
  return all(isclose(a, b, rtol, atol, equal_nan, s), false, s);
}

array trace(const array& a, int offset, int axis1, int axis2, Dtype dtype, StreamOrDevice s) {
  if (a.ndim() < 2) {
    throw std::invalid_argument(
        msg("[trace] Input must have at least 2 dimensions; got shape ", a.shape(), "."));
  }
  return sum(astype(diagonal(a, offset, axis1, axis2, s), dtype, s), -1, false, s);
}

array trace(const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
  Dtype t = a.dtype();
  if (t == bool_ || t == int8 || t == int16) {
    t = int32;
  } else if (t == uint8 || t == uint16) {
    t = uint32;
  }
  return trace(a, offset, axis1, axis2, t, s);
}

array trace(const array& a, StreamOrDevice s) { return trace(a, 0, 0, 1, s); }

}  // namespace mlx::core
