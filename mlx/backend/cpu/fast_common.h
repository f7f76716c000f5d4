// Helpers shared by the fused `fast` CPU kernels.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "mlx/array.h"
#include "mlx/backend/common/convert.h"
#include "mlx/backend/cpu/strided.h"

namespace mlx::core::fast::detail {

// float64 computes in double, every other float type in float.
template <typename T>
using AccType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// G sums at once: sums[g] is the sum of f(g, i) for i < n[g], over independent lanes (so the
// compiler can vectorize it without reassociating a single accumulator), then the tail and
// the lanes added in order. Each sum's additions are those of the one-row form whatever G;
// the G chains of dependent additions at the end interleave, so rows summed together do not
// wait for each other's (a row's chain is 16 additions long).
template <int G, typename Acc, typename F>
std::array<Acc, G> lane_sums_at(const std::array<int64_t, G>& n, F f) {
  constexpr int kLanes = 16;
  Acc part[G][kLanes] = {};
  std::array<Acc, G> s{};
  for (int g = 0; g < G; ++g) {
    int64_t i = 0;
    for (; i + kLanes <= n[g]; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        part[g][l] += f(g, i + l);
      }
    }
    for (; i < n[g]; ++i) {
      s[g] += f(g, i);
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    for (int g = 0; g < G; ++g) {
      s[g] += part[g][l];
    }
  }
  return s;
}

// Sum of f(i) for i < n (lane_sums_at of one row).
template <typename Acc, typename F>
Acc lane_sum_at(int64_t n, F f) {
  return lane_sums_at<1, Acc>({n}, [&f](int, int64_t i) { return f(i); })[0];
}

// lane_sum_at(n[r], x + r * ld) of rows r < count, written to sums[r]: four rows at a time.
template <typename Acc>
void lane_sum_rows(const Acc* x, int64_t ld, const int64_t* n, int64_t count, Acc* sums) {
  constexpr int G = 4;
  int64_t r = 0;
  for (; r + G <= count; r += G) {
    auto s = lane_sums_at<G, Acc>({n[r], n[r + 1], n[r + 2], n[r + 3]},
                                  [&](int g, int64_t i) { return x[(r + g) * ld + i]; });
    std::copy(s.begin(), s.end(), sums + r);
  }
  for (; r < count; ++r) {
    sums[r] = lane_sum_at<Acc>(n[r], [&](int64_t i) { return x[r * ld + i]; });
  }
}

// Rows normalized together: their sums' chains of dependent additions interleave (see
// lane_sums_at), each row's arithmetic unchanged.
inline constexpr int kRowGroup = 4;

// 1 / sqrt(mean(row^2) + eps) of G rows.
template <int G, typename Acc>
std::array<Acc, G> rms_rstd(const std::array<const Acc*, G>& rows, int64_t d, Acc eps) {
  std::array<int64_t, G> n;
  n.fill(d);
  auto ss = lane_sums_at<G, Acc>(n, [&](int g, int64_t i) { return rows[g][i] * rows[g][i]; });
  std::array<Acc, G> rstd;
  for (int g = 0; g < G; ++g) {
    rstd[g] = Acc(1) / std::sqrt(ss[g] / Acc(d) + eps);
  }
  return rstd;
}

// The mean and 1 / sqrt(variance + eps) of G rows. Summing deviations from the first element
// keeps the mean accurate when it is large relative to the spread.
template <int G, typename Acc>
std::array<std::pair<Acc, Acc>, G> mean_rstd(const std::array<const Acc*, G>& rows, int64_t d,
                                             Acc eps) {
  std::array<int64_t, G> n;
  n.fill(d);
  std::array<Acc, G> shift, mean;
  for (int g = 0; g < G; ++g) {
    shift[g] = rows[g][0];
  }
  auto dev = lane_sums_at<G, Acc>(n, [&](int g, int64_t i) { return rows[g][i] - shift[g]; });
  for (int g = 0; g < G; ++g) {
    mean[g] = shift[g] + dev[g] / Acc(d);
  }
  auto sq = lane_sums_at<G, Acc>(
      n, [&](int g, int64_t i) { return (rows[g][i] - mean[g]) * (rows[g][i] - mean[g]); });
  std::array<std::pair<Acc, Acc>, G> stats;
  for (int g = 0; g < G; ++g) {
    stats[g] = {mean[g], Acc(1) / std::sqrt(sq[g] / Acc(d) + eps)};
  }
  return stats;
}

// dst[i] = src[i * stride] converted to Acc.
template <typename Acc, typename T>
void load_row(const T* src, int64_t stride, int64_t n, Acc* dst) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = cast_value<Acc>(src[i]);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = cast_value<Acc>(src[i * stride]);
    }
  }
}

// The row src[i * stride], i < n, as Acc values: src itself when it already is (Acc elements
// at unit stride), else a converted copy in buf.
template <typename Acc, typename T>
const Acc* acc_row(const T* src, int64_t stride, int64_t n, Acc* buf) {
  if constexpr (std::is_same_v<T, Acc>) {
    if (stride == 1) {
      return src;
    }
  }
  load_row(src, stride, n, buf);
  return buf;
}

// for_each_row in groups: fn.template operator()<K>(offsets, r) with the offsets of the K rows
// from row r on; K = G while G rows remain, then 1.
template <int G, size_t N, typename F>
void for_each_row_group(const Layout<N>& layout, int64_t r0, int64_t r1, F&& fn) {
  std::array<std::array<int64_t, N>, G> offsets;
  int k = 0;
  int64_t r = r0;
  cpu::for_each_row(layout, r0, r1, [&](const std::array<int64_t, N>& off) {
    offsets[k++] = off;
    if (k == G) {
      fn.template operator()<G>(offsets, r);
      r += G;
      k = 0;
    }
  });
  for (int i = 0; i < k; ++i) {
    fn.template operator()<1>(std::array<std::array<int64_t, N>, 1>{offsets[i]}, r + i);
  }
}

// The rows of the last axis of arrays of one shape as a layout for cpu::for_each_row: the
// leading dimensions (merged where contiguous in all of them) followed by the last one.
template <size_t N>
Layout<N> last_axis_rows(const std::array<const array*, N>& xs) {
  const Shape& shape = xs[0]->shape();
  std::array<Strides, N> lead_strides;
  for (size_t k = 0; k < N; ++k) {
    lead_strides[k].assign(xs[k]->strides().begin(), xs[k]->strides().end() - 1);
  }
  auto layout = collapse_dims<N>(Shape(shape.begin(), shape.end() - 1), lead_strides);
  layout.shape.push_back(shape.back());
  for (size_t k = 0; k < N; ++k) {
    layout.strides[k].push_back(xs[k]->strides().back());
  }
  return layout;
}

inline Layout<1> last_axis_rows(const array& x) { return last_axis_rows<1>({&x}); }

// A per-feature parameter (weight or bias) as an Acc vector of n entries (`fill` when absent).
template <typename T, typename Acc>
std::vector<Acc> feature_param(const array* p, int64_t n, Acc fill) {
  std::vector<Acc> v(n, fill);
  if (p) {
    load_row(p->data<T>(), p->strides()[0], n, v.data());
  }
  return v;
}

}  // namespace mlx::core::fast::detail
