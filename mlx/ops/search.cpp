#include "mlx/ops/search.h"

#include <stdexcept>

#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/indexing.h"
#include "mlx/ops/reduction.h"
#include "mlx/ops/shape.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// Number of binary-search halvings that narrow [0, n] to one point.
int search_steps(int64_t n) {
  int steps = 0;
  while ((int64_t{1} << steps) <= n) {
    ++steps;
  }
  return steps;
}

// Insertion points of `values` into the ascending 1-D `seq` (both already of one dtype).
// `right` counts the elements <= value instead of < value.
array insertion_points(const array& seq, const array& values, bool right, StreamOrDevice s) {
  int64_t n = seq.size();
  array lo = zeros(values.shape(), int32, s);
  array hi = full(values.shape(), array(static_cast<int>(n), int32), int32, s);
  if (n == 0) {
    return astype(lo, uint32, s);
  }
  array last = array(static_cast<int>(n - 1), int32);
  for (int i = 0; i < search_steps(n); ++i) {
    // mid in [lo, hi); lanes where lo == hi are finished and keep their bounds.
    array mid = floor_divide(add(lo, hi, s), array(2, int32), s);
    array probe = take(seq, minimum(mid, last, s), 0, s);
    array go_right = right ? less_equal(probe, values, s) : less(probe, values, s);
    array active = less(lo, hi, s);
    lo = where(logical_and(active, go_right, s), add(mid, array(1, int32), s), lo, s);
    hi = where(logical_and(active, logical_not(go_right, s), s), mid, hi, s);
  }
  return astype(lo, uint32, s);
}

}  // namespace

array searchsorted(const array& sorted_sequence, const array& values, const std::string& side,
                   StreamOrDevice s) {
  if (side != "left" && side != "right") {
    throw std::invalid_argument(
        msg("[searchsorted] side must be 'left' or 'right'; got '", side, "'."));
  }
  if (sorted_sequence.ndim() != 1) {
    throw std::invalid_argument(msg("[searchsorted] sorted_sequence must be 1-D; got ",
                                    sorted_sequence.ndim(), " dimensions."));
  }
  if (is_complex(sorted_sequence.dtype()) || is_complex(values.dtype())) {
    throw std::invalid_argument("[searchsorted] Complex inputs are not ordered.");
  }
  Dtype t = promote_types(sorted_sequence.dtype(), values.dtype());
  return insertion_points(astype(sorted_sequence, t, s), astype(values, t, s), side == "right", s);
}

std::vector<array> unique(const array& a, int size, bool return_index, bool return_inverse,
                          bool return_counts, const std::optional<array>& fill_value,
                          StreamOrDevice s) {
  if (size < 0) {
    throw std::invalid_argument(msg("[unique] size must be non-negative; got ", size, "."));
  }
  if (is_complex(a.dtype())) {
    throw std::invalid_argument("[unique] Complex inputs are not supported (they are unordered).");
  }
  array flat = flatten(a, s);
  int n = static_cast<int>(flat.size());
  Dtype t = a.dtype();
  array fill = fill_value ? astype(*fill_value, t, s) : array(0, t);
  if (fill.ndim() != 0) {
    throw std::invalid_argument("[unique] fill_value must be a scalar.");
  }
  std::vector<array> out;
  if (n == 0) {
    out.push_back(full({size}, fill, t, s));
    if (return_index) {
      out.push_back(zeros({size}, uint32, s));
    }
    if (return_inverse) {
      out.push_back(zeros(a.shape(), uint32, s));
    }
    if (return_counts) {
      out.push_back(zeros({size}, uint32, s));
    }
    return out;
  }
  // The sort is stable, so the first element of each run of equal values is its first
  // occurrence in `a`.
  array order = argsort(flat, 0, s);
  array sorted = take(flat, order, 0, s);
  array prev = slice(sorted, {0}, {n - 1}, s);
  array next = slice(sorted, {1}, {n}, s);
  array changes = not_equal(next, prev, s);
  if (is_floating_point(t)) {
    changes =
        logical_and(changes, logical_not(logical_and(isnan(next, s), isnan(prev, s), s), s), s);
  }
  array starts = concatenate({array({true}), changes}, 0, s);
  // Run number of each sorted position, and where each of the first size + 1 runs begins
  // (n for runs that do not exist).
  array run = subtract(cumsum(astype(starts, int32, s), 0, false, true, s), array(1, int32), s);
  array begin = astype(searchsorted(run, arange(0, size + 1, s), "left", s), int32, s);
  array first = slice(begin, {0}, {size}, s);
  array exists = less(first, array(n, int32), s);
  array at = minimum(first, array(n - 1, int32), s);
  if (!fill_value) {
    fill = take(sorted, 0, 0, s);
  }
  out.push_back(where(exists, take(sorted, at, 0, s), fill, s));
  if (return_index) {
    out.push_back(where(exists, take(order, at, 0, s), array(0, uint32), s));
  }
  if (return_inverse) {
    if (size == 0) {
      out.push_back(zeros(a.shape(), uint32, s));
    } else {
      array entry = astype(minimum(run, array(size - 1, int32), s), uint32, s);
      array inverse = put_along_axis(zeros({n}, uint32, s), order, entry, 0, s);
      out.push_back(reshape(inverse, a.shape(), s));
    }
  }
  if (return_counts) {
    array counts = subtract(slice(begin, {1}, {size + 1}, s), first, s);
    out.push_back(astype(counts, uint32, s));
  }
  return out;
}

}  // namespace mlx::core
