// Fused cross entropy with class indices, forward and backward, over row-contiguous logits.
//
// Forward: each row is read once, in chunks that stay in L1: a chunk's max, then its exp-sum
// against the running max (rescaling the running sum when the max grows), so the logsumexp
// is online across chunks. The target's logit is picked from the same row. Backward: one
// pass writing (exp(x - lse) - one_hot) * g with the vector exp, from the saved lse. 16-bit
// rows go through a float32 chunk; float64 computes in double.
#include <cmath>
#include <limits>
#include <vector>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/cpu/dense.h"
#include "mlx/backend/cpu/reduce_utils.h"
#include "mlx/backend/cpu/softmax_row.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cpu;

// Elements per chunk of a row (16 KiB of float32).
constexpr int64_t kChunk = 4096;

// The target of row r, or -1 when it lies outside [0, n) (targets are int64 here).
inline int64_t row_target(const int64_t* t, int64_t r, int64_t n) {
  return t[r] >= 0 && t[r] < n ? t[r] : -1;
}

// Calls fn(r0, r1) over ranges of rows in parallel, about kParallelBytes of logits each.
template <typename Fn>
void for_row_ranges(int64_t rows, int64_t row_bytes, Fn&& fn) {
  parallel_for(rows, std::max<int64_t>(1, kParallelBytes / std::max<int64_t>(1, row_bytes)), fn);
}

// Running max and exp-sum of a row, merged chunk by chunk.
struct OnlineLse {
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  bool has_nan = false;

  // Merges chunk x; `ahead` (unless null) is the next chunk's raw data, `ahead_size` bytes
  // per element, prefetched during the exp pass so that memory stays busy.
  template <typename F>
  void add(const F* x, int64_t n, const char* ahead, int64_t ahead_size) {
    RowMax m = row_max(x, n);
    has_nan |= m.has_nan;
    if (m.value > max) {
      sum = sum > 0 ? sum * std::exp(max - m.value) : 0.0;
      max = m.value;
    }
    if (std::isfinite(max) && !has_nan) {
      sum += exp_sum(x, static_cast<F*>(nullptr), n, static_cast<F>(max), ahead, ahead_size);
    }
  }

  double value() const {
    if (has_nan) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    return std::isinf(max) ? max : max + std::log(sum);
  }
};

template <typename T>
void forward(const array& x, const int64_t* targets, int64_t rows, array& loss, array& lse_out) {
  using F = compute_t<T>;
  const int64_t n = x.shape(-1);
  const T* src = x.data<T>();
  float* loss_p = loss.data<float>();
  F* lse_p = lse_out.data<F>();
  for_row_ranges(rows, n * sizeof(T), [&](int64_t r0, int64_t r1) {
    std::vector<float> buf(is_half_v<T> ? std::min(n, kChunk) : 0);
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = src + r * n;
      OnlineLse acc;
      for (int64_t b = 0; b < n; b += kChunk) {
        int64_t len = std::min(kChunk, n - b);
        // The next chunk follows in memory, in this row or the next one of this range.
        bool more = b + len < n || r + 1 < r1;
        const char* ahead = more ? reinterpret_cast<const char*>(row + b + len) : nullptr;
        if constexpr (is_half_v<T>) {
          to_float(row + b, buf.data(), len);
          acc.add(buf.data(), len, ahead, sizeof(T));
        } else {
          acc.add(row + b, len, ahead, sizeof(T));
        }
      }
      F lse = static_cast<F>(acc.value());
      lse_p[r] = lse;
      int64_t t = row_target(targets, r, n);
      loss_p[r] = t < 0 ? std::numeric_limits<float>::quiet_NaN()
                        : static_cast<float>(lse - cast_value<F>(row[t]));
    }
  });
}

// y[i] = exp(x[i] - lse) * g over n elements.
void scaled_softmax(const float* x, float* y, int64_t n, float lse, float g) {
  using simd::VecF;
  const VecF vl(lse), vg(g);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    simd::store(y + i, simd::exp(simd::load(x + i) - vl) * vg);
  }
  for (; i < n; ++i) {
    y[i] = std::exp(x[i] - lse) * g;
  }
}

void scaled_softmax(const double* x, double* y, int64_t n, double lse, double g) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = std::exp(x[i] - lse) * g;
  }
}

template <typename T>
void backward(const array& x, const int64_t* targets, int64_t rows, const array& lse,
              const array& g, array& dx) {
  using F = compute_t<T>;
  const int64_t n = x.shape(-1);
  const T* src = x.data<T>();
  const F* lse_p = lse.data<F>();
  const F* g_p = g.data<F>();
  T* dst = dx.data<T>();
  for_row_ranges(rows, n * sizeof(T), [&](int64_t r0, int64_t r1) {
    std::vector<float> buf(is_half_v<T> ? std::min(n, kChunk) : 0);
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = src + r * n;
      T* out = dst + r * n;
      int64_t t = row_target(targets, r, n);
      if (t < 0) {
        std::fill(out, out + n, T(std::numeric_limits<float>::quiet_NaN()));
        continue;
      }
      F l = lse_p[r], gr = g_p[r];
      if constexpr (is_half_v<T>) {
        for (int64_t b = 0; b < n; b += kChunk) {
          int64_t len = std::min(kChunk, n - b);
          to_float(row + b, buf.data(), len);
          scaled_softmax(buf.data(), buf.data(), len, l, gr);
          if (b <= t && t < b + len) {
            buf[t - b] -= gr;
          }
          from_float(buf.data(), out + b, len);
        }
      } else {
        scaled_softmax(row, out, n, l, gr);
        out[t] -= gr;
      }
    }
  });
}

}  // namespace

void CrossEntropy::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& loss = outputs[0];
  array& lse = outputs[1];
  loss.set_data(allocator::malloc(loss.nbytes()));
  lse.set_data(allocator::malloc(lse.nbytes()));
  if (loss.size() == 0) {
    return;
  }
  std::optional<array> x_copy, t_copy;
  const array& x = row_contiguous(inputs[0], inputs[0].dtype(), x_copy);
  const int64_t* t = row_contiguous(inputs[1], int64, t_copy).data<int64_t>();
  dispatch_float(x.dtype(), "cross_entropy",
                 [&]<typename T>() { forward<T>(x, t, loss.size(), loss, lse); });
}

void CrossEntropyVJP::eval_cpu(const std::vector<array>& inputs, array& out) {
  // Rows are written after they are read, so the gradient can replace dying logits in place.
  if (can_write_over(inputs[0], out)) {
    out.copy_shared_buffer(inputs[0]);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
  }
  if (out.size() == 0) {
    return;
  }
  std::optional<array> x_copy, t_copy, lse_copy, g_copy;
  const array& x = row_contiguous(inputs[0], inputs[0].dtype(), x_copy);
  const int64_t* t = row_contiguous(inputs[1], int64, t_copy).data<int64_t>();
  const array& lse = row_contiguous(inputs[2], inputs[2].dtype(), lse_copy);
  const array& g = row_contiguous(inputs[3], inputs[2].dtype(), g_copy);
  int64_t rows = inputs[1].size();
  dispatch_float(x.dtype(), "cross_entropy_vjp",
                 [&]<typename T>() { backward<T>(x, t, rows, lse, g, out); });
}

}  // namespace mlx::core::fast
