// Host iteration over collapsed layouts (backend/common/layout.h): walk the outer dimensions
// row by row with offsets updated incrementally, and split rows over the thread pool.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "mlx/array.h"
#include "mlx/backend/common/layout.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

// Calls fn(offsets) for rows [row_begin, row_end) of the layout, where a row is the last
// dimension: offsets[k] is the element offset of the row start in operand k.
template <size_t N, typename F>
void for_each_row(const Layout<N>& layout, int64_t row_begin, int64_t row_end, F&& fn) {
  const int nd = static_cast<int>(layout.shape.size());
  const int outer = nd - 1;
  std::vector<int32_t> idx(outer > 0 ? outer : 1, 0);
  std::array<int64_t, N> off{};
  int64_t rem = row_begin;
  for (int d = outer - 1; d >= 0; --d) {
    idx[d] = static_cast<int32_t>(rem % layout.shape[d]);
    rem /= layout.shape[d];
    for (size_t k = 0; k < N; ++k) {
      off[k] += idx[d] * layout.strides[k][d];
    }
  }
  for (int64_t r = row_begin; r < row_end; ++r) {
    fn(off);
    for (int d = outer - 1; d >= 0; --d) {
      if (++idx[d] < layout.shape[d]) {
        for (size_t k = 0; k < N; ++k) {
          off[k] += layout.strides[k][d];
        }
        break;
      }
      for (size_t k = 0; k < N; ++k) {
        off[k] -= (layout.shape[d] - 1) * layout.strides[k][d];
      }
      idx[d] = 0;
    }
  }
}

// Calls fn(offsets, n) for every row of the layout, in pieces of at most kParallelBytes spread
// over the pool: offsets are those of the piece's first element and n its length. Unlike
// parallel_for over rows, a layout of a few long rows (one, when everything collapses, as for
// dense operands next to a broadcast scalar) still uses every thread.
template <size_t N, typename F>
void parallel_rows(const Layout<N>& layout, int64_t elem_bytes, F&& fn) {
  const int64_t rows = num_rows(layout.shape);
  const int64_t len = layout.shape.back();
  const int64_t piece = std::max<int64_t>(1, kParallelBytes / std::max<int64_t>(elem_bytes, 1));
  if (len <= piece) {
    parallel_for(
        rows, std::max<int64_t>(1, piece / std::max<int64_t>(len, 1)), [&](int64_t r0, int64_t r1) {
          for_each_row(layout, r0, r1, [&](const std::array<int64_t, N>& off) { fn(off, len); });
        });
    return;
  }
  const int64_t pieces = (len + piece - 1) / piece;
  parallel_for(rows * pieces, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t start = t % pieces * piece;
      for_each_row(layout, t / pieces, t / pieces + 1, [&](std::array<int64_t, N> off) {
        for (size_t k = 0; k < N; ++k) {
          off[k] += start * layout.strides[k].back();
        }
        fn(off, std::min(piece, len - start));
      });
    }
  });
}

}  // namespace mlx::core::cpu
