// Per-row passes shared by softmax / logsumexp, the fused cross entropy and attention: the row
// max (with a NaN flag) and the sum of exp(x - max) with the vector exp, at vec.h's width.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "mlx/backend/cpu/simd/vec.h"

namespace mlx::core::cpu {

// Elements whose exp-sum is accumulated in float lanes before moving into a double.
inline constexpr int64_t kSumBlock = 1024;

struct RowMax {
  double value;  // largest non-NaN element (-inf if none)
  bool has_nan;
};

inline RowMax row_max(const float* x, int64_t n) {
  using simd::VecF;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  VecF m0(ninf), m1(ninf), m2(ninf), m3(ninf);
  simd::MaskF nan0 = simd::is_nan(VecF(0.0f)), nan1 = nan0;
  constexpr int W = simd::kWidth;
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    VecF a = simd::load(x + i), b = simd::load(x + i + W);
    VecF c = simd::load(x + i + 2 * W), d = simd::load(x + i + 3 * W);
    // max(v, m) keeps m where v is NaN; NaNs are tracked on the side.
    m0 = simd::max(a, m0);
    m1 = simd::max(b, m1);
    m2 = simd::max(c, m2);
    m3 = simd::max(d, m3);
    nan0 = nan0 | simd::is_nan(a) | simd::is_nan(b);
    nan1 = nan1 | simd::is_nan(c) | simd::is_nan(d);
  }
  for (; i + W <= n; i += W) {
    VecF a = simd::load(x + i);
    m0 = simd::max(a, m0);
    nan0 = nan0 | simd::is_nan(a);
  }
  float m = simd::hmax(simd::max(simd::max(m0, m1), simd::max(m2, m3)));
  bool has_nan = simd::any(nan0 | nan1);
  for (; i < n; ++i) {
    m = x[i] > m ? x[i] : m;
    has_nan |= x[i] != x[i];
  }
  return {m, has_nan};
}

inline RowMax row_max(const double* x, int64_t n) {
  double m = -std::numeric_limits<double>::infinity();
  bool has_nan = false;
  for (int64_t i = 0; i < n; ++i) {
    m = x[i] > m ? x[i] : m;
    has_nan |= x[i] != x[i];
  }
  return {m, has_nan};
}

// sum(exp(x - m)), storing the exponentials into e unless it is null. `ahead` (unless null)
// is the next row with `ahead_size` bytes per element: it is prefetched along the way.
inline double exp_sum(const float* x, float* e, int64_t n, float m, const char* ahead = nullptr,
                      int64_t ahead_size = 0) {
  using simd::VecF;
  constexpr int W = simd::kWidth;
  const VecF vm(m);
  double total = 0;
  for (int64_t b = 0; b < n; b += kSumBlock) {
    int64_t end = std::min(n, b + kSumBlock);
    VecF s0(0.0f), s1(0.0f);
    int64_t i = b;
    for (; i + 2 * W <= end; i += 2 * W) {
      if (ahead) {
        __builtin_prefetch(ahead + i * ahead_size);
      }
      VecF a = simd::exp(simd::load(x + i) - vm);
      VecF c = simd::exp(simd::load(x + i + W) - vm);
      if (e) {
        simd::store(e + i, a);
        simd::store(e + i + W, c);
      }
      s0 = s0 + a;
      s1 = s1 + c;
    }
    float s = simd::hsum(s0 + s1);
    for (; i < end; ++i) {
      float v = std::exp(x[i] - m);
      if (e) {
        e[i] = v;
      }
      s += v;
    }
    total += s;
  }
  return total;
}

inline double exp_sum(const double* x, double* e, int64_t n, double m, const char* = nullptr,
                      int64_t = 0) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = std::exp(x[i] - m);
    if (e) {
      e[i] = v;
    }
    total += v;
  }
  return total;
}

}  // namespace mlx::core::cpu
