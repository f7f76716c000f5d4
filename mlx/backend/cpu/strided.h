// Iteration over strided layouts: merge dimensions that are contiguous in every operand, then
// walk the outer dimensions row by row with offsets updated incrementally.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "mlx/array.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

template <size_t N>
struct Layout {
  Shape shape;
  std::array<Strides, N> strides;
};

// Drops size-1 dimensions and merges neighbours that are contiguous in every operand.
template <size_t N>
Layout<N> collapse_dims(const Shape& shape, const std::array<Strides, N>& strides) {
  Layout<N> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) {
      continue;
    }
    bool merge = !out.shape.empty();
    for (size_t k = 0; merge && k < N; ++k) {
      merge = out.strides[k].back() == strides[k][d] * shape[d];
    }
    if (merge) {
      out.shape.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) {
        out.strides[k].back() = strides[k][d];
      }
    } else {
      out.shape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) {
        out.strides[k].push_back(strides[k][d]);
      }
    }
  }
  if (out.shape.empty()) {
    out.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) {
      out.strides[k].push_back(0);
    }
  }
  return out;
}

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

// The dimensions of `in` and `out` other than `axis`, collapsed: the lines along `axis` that
// reductions and scans walk one by one.
inline Layout<2> collapse_dims_except(const array& in, const array& out, int axis) {
  Shape shape;
  Strides in_strides, out_strides;
  for (int d = 0; d < in.ndim(); ++d) {
    if (d != axis) {
      shape.push_back(in.shape(d));
      in_strides.push_back(in.strides()[d]);
      out_strides.push_back(out.strides()[d]);
    }
  }
  return collapse_dims<2>(shape, {in_strides, out_strides});
}

inline int64_t num_rows(const Shape& collapsed) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < collapsed.size(); ++d) {
    rows *= collapsed[d];
  }
  return rows;
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
