// Softmax and logsumexp over the last axis of a row-contiguous input.
//
// Each row takes three passes: max; exp(x - max) into a per-thread scratch row while summing
// (and prefetching the next row, so that the max pass finds it in cache); and the scaled
// write of the output, with streaming stores when the output is too large to stay cached.
// So each input row is read from memory once and each output row written once. logsumexp
// skips the scratch and the write. Many rows are processed in parallel; a few long rows run
// each pass in parallel chunks instead. float16 / bfloat16 rows are converted into the
// float32 scratch row first; float32 uses the 8-lane vector exp of simd/vec.h.
#include <cmath>
#include <limits>

#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/cpu/reduce_utils.h"
#include "mlx/backend/cpu/simd/vec.h"
#include "mlx/backend/cpu/softmax_row.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/reduction.h"

namespace mlx::core {

namespace {

using namespace cpu;

// Rows up to this many elements keep their exponentials in a cache-resident scratch row.
constexpr int64_t kScratchElems = 32768;
// Outputs larger than this are written with streaming stores.
constexpr int64_t kStreamBytes = int64_t{16} << 20;

// y = e * s; with `stream`, through streaming stores that bypass the cache (and skip the
// read of the destination lines that an ordinary store costs).
template <typename F>
void store_scaled(const F* e, F* y, int64_t n, F s, bool stream) {
  int64_t i = 0;
#ifdef MLX_SIMD_AVX2
  if constexpr (std::is_same_v<F, float>) {
    if (stream) {
      for (; i < n && (reinterpret_cast<uintptr_t>(y + i) & 31) != 0; ++i) {
        y[i] = e[i] * s;
      }
      const simd::VecF vs(s);
      for (; i + 8 <= n; i += 8) {
        _mm256_stream_ps(y + i, (simd::load(e + i) * vs).v);
      }
    }
  }
#endif
  for (; i < n; ++i) {
    y[i] = e[i] * s;
  }
}

// Orders streaming stores before the results are handed to other threads.
inline void stream_fence() {
#ifdef MLX_SIMD_AVX2
  _mm_sfence();
#endif
}

template <typename F>
F logsumexp_finish(const RowMax& m, double sum) {
  if (m.has_nan) {
    return std::numeric_limits<F>::quiet_NaN();
  }
  if (std::isinf(m.value)) {
    return static_cast<F>(m.value);
  }
  return static_cast<F>(m.value + std::log(sum));
}

// Calls fn(x, scratch, next, r) for rows [0, rows) of src in parallel: x is row r in the
// compute type (16-bit rows converted into the scratch row), scratch a per-thread row of
// `scratch_n` elements, next the raw next row of the same thread's range (or null).
template <typename T, typename Fn>
void for_rows(const T* src, int64_t rows, int64_t n, int64_t scratch_n, Fn&& fn) {
  using F = compute_t<T>;
  int64_t grain = std::max<int64_t>(1, kParallelBytes / (n * static_cast<int64_t>(sizeof(T))));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<F> scratch(is_half_v<T> ? n : scratch_n);
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = src + r * n;
      const char* next = r + 1 < r1 ? reinterpret_cast<const char*>(row + n) : nullptr;
      if constexpr (is_half_v<T>) {
        to_float(row, scratch.data(), n);
        fn(scratch.data(), scratch.data(), next, r);
      } else {
        fn(row, scratch.empty() ? nullptr : scratch.data(), next, r);
      }
    }
  });
}

// Max and exp-sum of one long row, each pass split into parallel chunks; the exponentials
// are stored into e unless it is null.
struct RowStats {
  RowMax max;
  double sum;
};

template <typename F>
RowStats long_row_stats(const F* x, F* e, int64_t n) {
  int64_t chunks = std::clamp<int64_t>(n * sizeof(F) / kParallelBytes, 1, 4 * num_threads());
  auto each_chunk = [&](auto&& fn) {
    parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        fn(c, n * c / chunks, n * (c + 1) / chunks);
      }
    });
  };
  std::vector<RowMax> maxes(chunks);
  each_chunk([&](int64_t c, int64_t b, int64_t end) { maxes[c] = row_max(x + b, end - b); });
  RowStats st{{-std::numeric_limits<double>::infinity(), false}, 0.0};
  for (auto& p : maxes) {
    st.max.value = std::max(st.max.value, p.value);
    st.max.has_nan |= p.has_nan;
  }
  std::vector<double> sums(chunks);
  F m = static_cast<F>(st.max.value);
  each_chunk([&](int64_t c, int64_t b, int64_t end) {
    sums[c] = exp_sum(x + b, e ? e + b : nullptr, end - b, m);
  });
  for (double p : sums) {
    st.sum += p;
  }
  return st;
}

// Whether rows are too few to parallelize over, and long enough to split each one.
bool few_long_rows(int64_t rows, int64_t row_bytes) {
  return rows < 2 * num_threads() && row_bytes >= 4 * kParallelBytes;
}

// Runs fn(x, y) on each row of src one at a time (y is null when dst is), with 16-bit rows
// converted to and from a float scratch row in parallel.
template <typename T, typename Fn>
void for_long_rows(const T* src, T* dst, int64_t rows, int64_t n, Fn&& fn) {
  for (int64_t r = 0; r < rows; ++r) {
    if constexpr (is_half_v<T>) {
      std::vector<float> buf(n);
      parallel_for(n, kParallelBytes / 4,
                   [&](int64_t b, int64_t e) { to_float(src + r * n + b, buf.data() + b, e - b); });
      fn(buf.data(), buf.data());
      if (dst) {
        parallel_for(n, kParallelBytes / 4, [&](int64_t b, int64_t e) {
          from_float(buf.data() + b, dst + r * n + b, e - b);
        });
      }
    } else {
      fn(src + r * n, dst ? dst + r * n : nullptr);
    }
  }
}

template <typename T>
void softmax(const array& in, array& out) {
  using F = compute_t<T>;
  if (in.is_donatable() && in.flags().row_contiguous) {
    out.copy_shared_buffer(in);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
  }
  if (out.size() == 0) {
    return;
  }
  const int64_t n = in.shape(-1);
  const int64_t rows = static_cast<int64_t>(in.size()) / n;
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  if (few_long_rows(rows, n * sizeof(T))) {
    for_long_rows(src, dst, rows, n, [&](const F* x, F* y) {
      RowStats st = long_row_stats(x, y, n);
      F inv = static_cast<F>(1.0 / st.sum);
      parallel_for(n, kParallelBytes / sizeof(F), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          y[i] *= inv;
        }
      });
    });
    return;
  }
  const bool stream = static_cast<int64_t>(out.nbytes()) >= kStreamBytes;
  for_rows(src, rows, n, n <= kScratchElems ? n : 0,
           [&](const F* x, F* scratch, const char* next, int64_t r) {
             T* y = dst + r * n;
             F* e = scratch;
             if constexpr (!is_half_v<T>) {
               if (!e) {
                 e = y;  // a long row: the exponentials go straight to the output
               }
             }
             RowMax m = row_max(x, n);
             double s = exp_sum(x, e, n, static_cast<F>(m.value), next, sizeof(T));
             F inv = static_cast<F>(1.0 / s);
             if constexpr (is_half_v<T>) {
               for (int64_t i = 0; i < n; ++i) {
                 e[i] *= inv;
               }
               from_float(e, y, n);
             } else {
               store_scaled(e, y, n, inv, stream && scratch);
             }
             if (stream && !next) {
               stream_fence();  // the last row of this thread's range
             }
           });
}

template <typename T>
void logsumexp(const array& in, array& out) {
  using F = compute_t<T>;
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  const int64_t n = in.shape(-1);
  const int64_t rows = static_cast<int64_t>(out.size());
  T* dst = out.data<T>();
  if (n == 0) {
    std::fill(dst, dst + rows, T(-std::numeric_limits<float>::infinity()));
    return;
  }
  const T* src = in.data<T>();
  if (few_long_rows(rows, n * sizeof(T))) {
    int64_t r = 0;
    for_long_rows(src, static_cast<T*>(nullptr), rows, n, [&](const F* x, F*) {
      RowStats st = long_row_stats(x, static_cast<F*>(nullptr), n);
      dst[r++] = static_cast<T>(logsumexp_finish<F>(st.max, st.sum));
    });
    return;
  }
  for_rows(src, rows, n, 0, [&](const F* x, F*, const char* next, int64_t r) {
    RowMax m = row_max(x, n);
    double s = 0;
    if (!m.has_nan && !std::isinf(m.value)) {
      s = exp_sum(x, static_cast<F*>(nullptr), n, static_cast<F>(m.value), next, sizeof(T));
    }
    dst[r] = static_cast<T>(logsumexp_finish<F>(m, s));
  });
}

}  // namespace

void Softmax::eval_cpu(const std::vector<array>& inputs, array& out) {
  // 16-bit inputs always compute in float32, so `precise` needs no separate path.
  dispatch_float(inputs[0].dtype(), "softmax", [&]<typename T>() { softmax<T>(inputs[0], out); });
}

void LogSumExp::eval_cpu(const std::vector<array>& inputs, array& out) {
  dispatch_float(inputs[0].dtype(), "logsumexp",
                 [&]<typename T>() { logsumexp<T>(inputs[0], out); });
}

}  // namespace mlx::core
