#include "mlx/ops/composites.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <stdexcept>

#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/indexing.h"
#include "mlx/ops/reduction.h"
#include "mlx/ops/shape.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// a[lo:hi] along `axis`, everything along the other axes.
array slice_axis(const array& a, int axis, int lo, int hi, StreamOrDevice s) {
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  start[axis] = lo;
  stop[axis] = hi;
  return slice(a, std::move(start), std::move(stop), s);
}

std::vector<int> every_axis(const array& a) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

}  // namespace

array diff(const array& a, int n, int axis, StreamOrDevice s) {
  if (n < 0) {
    throw std::invalid_argument(msg("[diff] Order n must be non-negative; got ", n, "."));
  }
  if (a.ndim() == 0) {
    throw std::invalid_argument("[diff] Input must have at least one dimension; got a scalar.");
  }
  int ax = normalize_axis(axis, a.ndim(), "diff");
  array out = a;
  for (int i = 0; i < n && out.shape(ax) > 0; ++i) {
    int len = out.shape(ax);
    array hi = slice_axis(out, ax, 1, len, s);
    array lo = slice_axis(out, ax, 0, len - 1, s);
    // NumPy's diff of booleans is "changed" rather than a subtraction.
    out = out.dtype() == bool_ ? not_equal(hi, lo, s) : subtract(hi, lo, s);
  }
  return out;
}

array median(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto ax = normalize_axes(axes, a.ndim(), "median");
  std::sort(ax.begin(), ax.end());
  Dtype out_dtype = is_inexact(a.dtype()) ? a.dtype() : float32;
  // Half types average in float32 so that two large values do not overflow.
  Dtype work = (out_dtype == float16 || out_dtype == bfloat16) ? float32 : out_dtype;

  // Move the reduced axes last and merge them into one.
  std::vector<int> perm;
  Shape kept_shape;
  Shape keep_shape = a.shape();
  for (int i = 0; i < a.ndim(); ++i) {
    if (!std::binary_search(ax.begin(), ax.end(), i)) {
      perm.push_back(i);
      kept_shape.push_back(a.shape(i));
    } else {
      keep_shape[i] = 1;
    }
  }
  int64_t count = 1;
  for (int i : ax) {
    perm.push_back(i);
    count *= a.shape(i);
  }
  Shape out_shape = keepdims ? keep_shape : kept_shape;
  if (count == 0) {
    return full(out_shape, std::numeric_limits<double>::quiet_NaN(), out_dtype, s);
  }
  Shape rows_shape = kept_shape;
  rows_shape.push_back(static_cast<int>(count));
  array rows = sort(reshape(transpose(a, perm, s), rows_shape, s), -1, s);
  int last = static_cast<int>(rows_shape.size()) - 1;
  int k = static_cast<int>((count - 1) / 2);
  array mid = astype(slice_axis(rows, last, k, k + 1, s), work, s);
  if (count % 2 == 0) {
    array upper = astype(slice_axis(rows, last, k + 1, k + 2, s), work, s);
    mid = multiply(add(mid, upper, s), array(0.5, work), s);
  }
  if (is_floating_point(a.dtype())) {
    // Any NaN makes the median NaN, wherever the sort placed it.
    mid = where(any(isnan(rows, s), -1, true, s), array(std::nanf(""), work), mid, s);
  }
  return reshape(astype(mid, out_dtype, s), out_shape, s);
}

array median(const array& a, bool keepdims, StreamOrDevice s) {
  return median(a, every_axis(a), keepdims, s);
}

array median(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return median(a, std::vector<int>{axis}, keepdims, s);
}

array count_nonzero(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  array nonzero = not_equal(a, astype(array(0), a.dtype(), s), s);
  return astype(sum(nonzero, axes, keepdims, s), int32, s);
}

array count_nonzero(const array& a, bool keepdims, StreamOrDevice s) {
  return count_nonzero(a, every_axis(a), keepdims, s);
}

array count_nonzero(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return count_nonzero(a, std::vector<int>{axis}, keepdims, s);
}

array vecdot(const array& a, const array& b, int axis, StreamOrDevice s) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), "vecdot");
  if (shape.empty()) {
    throw std::invalid_argument("[vecdot] Inputs must have at least one dimension; got scalars.");
  }
  int ax = normalize_axis(axis, static_cast<int>(shape.size()), "vecdot");
  array lhs = is_complex(a.dtype()) ? conjugate(a, s) : a;
  return sum(multiply(lhs, b, s), ax, false, s);
}

array positive(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_) {
    throw std::invalid_argument("[positive] Not supported for boolean arrays.");
  }
  return a;
}

namespace {

// Windows of M points computed in float64 and returned as float32; `body` maps the float64
// sample indices n = 0..M-1 (M >= 2) to the window.
template <typename F>
array window(int M, F body, StreamOrDevice s) {
  if (M < 1) {
    return zeros({0}, float32, s);
  }
  if (M == 1) {
    return ones({1}, float32, s);
  }
  array n = arange(0.0, static_cast<double>(M), 1.0, float64, s);
  return astype(body(n, static_cast<double>(M - 1)), float32, s);
}

// a0 - a1 cos(2 pi n / (M-1)) + a2 cos(4 pi n / (M-1))
array cosine_window(int M, double a0, double a1, double a2, StreamOrDevice s) {
  return window(
      M,
      [&](const array& n, double m1) {
        array phase = multiply(n, array(2.0 * std::numbers::pi / m1, float64), s);
        array w = subtract(array(a0, float64), multiply(array(a1, float64), cos(phase, s), s), s);
        if (a2 != 0.0) {
          w = add(w, multiply(array(a2, float64), cos(add(phase, phase, s), s), s), s);
        }
        return w;
      },
      s);
}

}  // namespace

array hanning(int M, StreamOrDevice s) { return cosine_window(M, 0.5, 0.5, 0.0, s); }

array hamming(int M, StreamOrDevice s) { return cosine_window(M, 0.54, 0.46, 0.0, s); }

array blackman(int M, StreamOrDevice s) { return cosine_window(M, 0.42, 0.5, 0.08, s); }

array bartlett(int M, StreamOrDevice s) {
  // 1 - |2n - (M-1)| / (M-1): a triangle peaking at the centre.
  return window(
      M,
      [&](const array& n, double m1) {
        array centred = subtract(multiply(n, array(2.0, float64), s), array(m1, float64), s);
        return subtract(array(1.0, float64), divide(abs(centred, s), array(m1, float64), s), s);
      },
      s);
}

bool can_cast(Dtype from, Dtype to) { return promote_types(from, to) == to; }

bool isdtype(Dtype dtype, const std::string& kind) {
  bool is_signed = issubdtype(dtype, DtypeCategory::signedinteger);
  bool is_unsigned_int = issubdtype(dtype, DtypeCategory::unsignedinteger);
  if (kind == "bool") {
    return dtype == bool_;
  }
  if (kind == "signed integer") {
    return is_signed;
  }
  if (kind == "unsigned integer") {
    return is_unsigned_int;
  }
  if (kind == "integral") {
    return is_signed || is_unsigned_int;
  }
  if (kind == "real floating") {
    return is_floating_point(dtype);
  }
  if (kind == "complex floating") {
    return is_complex(dtype);
  }
  if (kind == "numeric") {
    return dtype != bool_;
  }
  throw std::invalid_argument(
      msg("[isdtype] Unknown kind '", kind,
          "'; expected 'bool', 'signed integer', 'unsigned integer', 'integral', "
          "'real floating', 'complex floating' or 'numeric'."));
}

}  // namespace mlx::core
