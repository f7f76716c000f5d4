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

std::vector<array> minmax(const array& a, const std::vector<int>& axes, bool keepdims,
                          StreamOrDevice s) {
  return {min(a, axes, keepdims, s), max(a, axes, keepdims, s)};
}

std::vector<array> minmax(const array& a, bool keepdims, StreamOrDevice s) {
  return minmax(a, every_axis(a), keepdims, s);
}

array matrix_transpose(const array& a, StreamOrDevice s) {
  if (a.ndim() < 2) {
    throw std::invalid_argument(
        msg("[matrix_transpose] Input must have at least 2 dimensions; got ", a.ndim(), "."));
  }
  return swapaxes(a, -1, -2, s);
}

namespace {

constexpr uint32_t kFp8Nan = 0x7F;
constexpr float kFp8Max = 448.0f;

// 2^e as float32 for integer exponents e in the normal range, built from the exponent bits.
array exp2_int(const array& e, StreamOrDevice s) {
  array biased = astype(add(e, array(127, int32), s), uint32, s);
  return view(left_shift(biased, array(23u, uint32), s), float32, s);
}

}  // namespace

array to_fp8(const array& x, StreamOrDevice s) {
  if (!is_floating_point(x.dtype())) {
    throw std::invalid_argument(
        msg("[to_fp8] Input must be a floating-point array; got ", x.dtype(), "."));
  }
  array f = astype(x, float32, s);
  array bits = view(f, uint32, s);
  array sign = left_shift(right_shift(bits, array(31u, uint32), s), array(7u, uint32), s);
  array nan = isnan(f, s);
  array mag = where(nan, array(0.0f), minimum(abs(f, s), array(kFp8Max), s), s);
  // Exponent of the magnitude, floored at the smallest normal exponent (-6): below it the
  // spacing stays 2^-9 (subnormals).
  array exp_bits = right_shift(view(mag, uint32, s), array(23u, uint32), s);
  array e =
      maximum(subtract(astype(exp_bits, int32, s), array(127, int32), s), array(-6, int32), s);
  // Scaled to units of the spacing 2^(e-3) (exact), then rounded half to even.
  array scaled = divide(mag, exp2_int(subtract(e, array(3, int32), s), s), s);
  array whole = floor(scaled, s);
  array frac = subtract(scaled, whole, s);
  array odd = equal(remainder(whole, array(2.0f), s), array(1.0f), s);
  array up = logical_or(greater(frac, array(0.5f), s),
                        logical_and(equal(frac, array(0.5f), s), odd, s), s);
  array m = astype(add(whole, astype(up, float32, s), s), int32, s);
  // Rounding up to 16 units carries into the exponent.
  array carry = equal(m, array(16, int32), s);
  m = where(carry, array(8, int32), m, s);
  e = add(e, astype(carry, int32, s), s);
  array normal = greater_equal(m, array(8, int32), s);
  array exponent = where(normal, add(e, array(7, int32), s), array(0, int32), s);
  array mantissa = where(normal, subtract(m, array(8, int32), s), m, s);
  array code = bitwise_or(astype(left_shift(exponent, array(3, int32), s), uint32, s),
                          astype(mantissa, uint32, s), s);
  code = where(nan, array(kFp8Nan, uint32), bitwise_or(code, sign, s), s);
  return astype(code, uint8, s);
}

array from_fp8(const array& x, Dtype dtype, StreamOrDevice s) {
  if (x.dtype() != uint8) {
    throw std::invalid_argument(
        msg("[from_fp8] Input must be a uint8 array of fp8 codes; got ", x.dtype(), "."));
  }
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        msg("[from_fp8] dtype must be a floating-point type; got ", dtype, "."));
  }
  // Every code decoded once on the host: (-1)^s * 2^(E-7) * (1 + M/8), subnormals
  // 2^-6 * M/8, and S.1111.111 as NaN.
  std::vector<float> table(256);
  for (int code = 0; code < 256; ++code) {
    int exponent = (code >> 3) & 0xF;
    int mantissa = code & 0x7;
    float v = exponent == 0 ? std::ldexp(mantissa / 8.0f, -6)
                            : std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
    if ((code & 0x7F) == kFp8Nan) {
      v = std::numeric_limits<float>::quiet_NaN();
    }
    table[code] = (code & 0x80) ? -v : v;
  }
  array lut(table.data(), {256}, float32);
  return astype(take(lut, astype(x, uint32, s), 0, s), dtype, s);
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
