// Helpers shared by the fused `fast` CPU kernels.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mlx/array.h"
#include "mlx/backend/cpu/dispatch.h"
#include "mlx/backend/cpu/strided.h"

namespace mlx::core::fast::detail {

// float64 computes in double, every other float type in float.
template <typename T>
using AccType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Sum of f(x[i]) over independent lanes, so the compiler can vectorize it without
// reassociating a single accumulator.
template <typename Acc, typename F>
Acc lane_sum(const Acc* x, int64_t n, F f) {
  constexpr int kLanes = 16;
  Acc part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      part[l] += f(x[i + l]);
    }
  }
  Acc s = 0;
  for (; i < n; ++i) {
    s += f(x[i]);
  }
  for (int l = 0; l < kLanes; ++l) {
    s += part[l];
  }
  return s;
}

// dst[i] = src[i * stride] converted to Acc.
template <typename Acc, typename T>
void load_row(const T* src, int64_t stride, int64_t n, Acc* dst) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = cpu::cast_value<Acc>(src[i]);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = cpu::cast_value<Acc>(src[i * stride]);
    }
  }
}

// The rows of x's last axis as a layout for cpu::for_each_row: the leading dimensions
// (merged where contiguous) followed by the last one.
inline cpu::Layout<1> last_axis_rows(const array& x) {
  Shape lead(x.shape().begin(), x.shape().end() - 1);
  Strides lead_strides(x.strides().begin(), x.strides().end() - 1);
  auto layout = cpu::collapse_dims<1>(lead, {lead_strides});
  layout.shape.push_back(x.shape().back());
  layout.strides[0].push_back(x.strides().back());
  return layout;
}

}  // namespace mlx::core::fast::detail
