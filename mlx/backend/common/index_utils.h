// Index wrapping and bounds checks shared by the gather and scatter kernels of every backend.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "mlx/array.h"

namespace mlx::core {

// Negative indices count from the end. Unsigned values beyond int64 become negative, so they
// fail the bounds check like any other bad index.
template <typename I>
inline int64_t wrap_index(I x, int64_t n) {
  if constexpr (std::is_signed_v<I>) {
    return x < 0 ? static_cast<int64_t>(x) + n : static_cast<int64_t>(x);
  } else {
    return static_cast<int64_t>(x);
  }
}

// A slice of `slice` elements (at least one) starting at a wrapped index fits in an axis of size
// n when the index is below this bound (as unsigned, so negatives fail too).
inline uint64_t index_limit(int64_t n, int64_t slice) {
  return static_cast<uint64_t>(std::max<int64_t>(0, n - std::max<int64_t>(slice, 1) + 1));
}

inline bool index_fits(int64_t wrapped, uint64_t limit) {
  return static_cast<uint64_t>(wrapped) < limit;
}

[[noreturn]] inline void throw_index_error(const char* op, const std::string& index, int axis,
                                           int64_t n, int64_t slice) {
  std::string where = " is out of bounds for axis " + std::to_string(axis) + " with size " +
                      std::to_string(n) + ".";
  if (slice > 1) {
    throw std::out_of_range(std::string("[") + op + "] A slice of size " + std::to_string(slice) +
                            " starting at index " + index + where);
  }
  throw std::out_of_range(std::string("[") + op + "] Index " + index + where);
}

// Throws for the first of `len` indices (read with `stride`) that does not fit; call it once a
// row is known to hold a bad index.
template <typename I>
[[noreturn]] void report_bad_index(const I* idx, int64_t stride, int64_t len, int64_t n,
                                   int64_t slice, const char* op, int axis) {
  uint64_t limit = index_limit(n, slice);
  for (int64_t i = 0; i < len; ++i) {
    I x = idx[i * stride];
    if (!index_fits(wrap_index(x, n), limit)) {
      throw_index_error(op, std::to_string(+x), axis, n, slice);
    }
  }
  throw std::logic_error(std::string("[") + op + "] Index check failed.");
}

}  // namespace mlx::core
