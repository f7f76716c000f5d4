// Dimension collapsing for strided operands: merge dimensions that are contiguous in every
// operand, so kernels of every backend walk as few (and as long) rows as possible.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {

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

}  // namespace mlx::core
