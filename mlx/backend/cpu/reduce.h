// The CPU reduction engine (templates; instantiated by reduce.cpp and reduce_minmax.cpp).
//
// The input's dimensions are made positive-strided, stripped of size-1 dimensions, ordered by
// decreasing stride, merged where contiguous, and split into kept and reduced dimensions.
// Then one of two engines runs:
//  - row: the innermost dimension is reduced. Each output folds spans of that dimension with
//    many independent accumulator lanes (vectorized for unit stride, strided otherwise).
//    Reduce-all and reduce-last-axis are its one-output and many-output cases; when there
//    are fewer outputs than threads, each output's spans are split across threads.
//  - column: the innermost dimension is kept and unit-stride (e.g. reducing leading axes of
//    a row-major array). Whole rows are accumulated into a lane buffer with vector ops. The
//    rows are split across threads (each streams a contiguous block and keeps partials for
//    every output) unless the outputs are many; then column chunks run in parallel.
// Float32 sums run in float lanes that are flushed into doubles every few thousand elements
// (or every kRowBlock rows), which keeps them accurate to about 1e-7 at full speed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "mlx/array.h"
#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/reduce_plan.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/reduce_utils.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/reduction.h"

namespace mlx::core::cpu {

// ---------------------------------------------------------------------------------------
// Operations. V: the type accumulator lanes hold; P: the type partial results combine in.
// apply() is a template so that the same rule combines lanes (V) and partials (P).

template <typename V_>
struct SumOp {
  using V = V_;
  using P = std::conditional_t<std::is_same_v<V, float>, double, V>;
  static V init() { return V(0); }
  template <typename T>
  static T apply(T a, T b) {
    return a + b;
  }
};

template <typename V_>
struct ProdOp {
  using V = V_;
  using P = V;
  static V init() { return V(1); }
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) {
      return a & b;
    } else {
      return a * b;
    }
  }
};

template <typename V>
constexpr V lowest_value() {
  if constexpr (std::is_same_v<V, complex64_t>) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    return complex64_t(-inf, -inf);
  } else if constexpr (std::is_floating_point_v<V>) {
    return -std::numeric_limits<V>::infinity();
  } else {
    return std::numeric_limits<V>::lowest();
  }
}

template <typename V>
constexpr V highest_value() {
  if constexpr (std::is_same_v<V, complex64_t>) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    return complex64_t(inf, inf);
  } else if constexpr (std::is_floating_point_v<V>) {
    return std::numeric_limits<V>::infinity();
  } else {
    return std::numeric_limits<V>::max();
  }
}

// Max and min propagate NaN: once a lane holds NaN it keeps it.
template <typename V_>
struct MaxOp {
  using V = V_;
  using P = V;
  static V init() { return lowest_value<V>(); }
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return (b > a || b != b) ? b : a;
    } else {
      return b > a ? b : a;
    }
  }
};

template <typename V_>
struct MinOp {
  using V = V_;
  using P = V;
  static V init() { return highest_value<V>(); }
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return (b < a || b != b) ? b : a;
    } else {
      return b < a ? b : a;
    }
  }
};

// Logical reductions hold 0 / 1 in lanes as wide as the input elements, so that the
// non-zero test vectorizes.
template <typename V_>
struct AndOp {
  using V = V_;
  using P = V;
  static V init() { return V(1); }
  template <typename T>
  static T apply(T a, T b) {
    return a & b;
  }
};

template <typename V_>
struct OrOp {
  using V = V_;
  using P = V;
  static V init() { return V(0); }
  template <typename T>
  static T apply(T a, T b) {
    return a | b;
  }
};

template <typename T>
using logical_lane_t = std::conditional_t<
    sizeof(compute_t<T>) == 8, uint64_t,
    std::conditional_t<sizeof(compute_t<T>) == 4, uint32_t,
                       std::conditional_t<sizeof(compute_t<T>) == 2, uint16_t, uint8_t>>>;

template <typename Op>
inline constexpr bool is_logical_v = false;
template <typename V>
inline constexpr bool is_logical_v<AndOp<V>> = true;
template <typename V>
inline constexpr bool is_logical_v<OrOp<V>> = true;

// An element as a lane value of Op (logical ops test for non-zero).
template <typename Op, typename T>
inline typename Op::V load(T x) {
  if constexpr (is_logical_v<Op>) {
    return static_cast<typename Op::V>(x != T(0));
  } else {
    return static_cast<typename Op::V>(x);
  }
}

// ---------------------------------------------------------------------------------------
// Spans.

// Enough independent lanes to fill 8 AVX registers.
template <typename V>
constexpr int kLanes = std::max<int>(8, 256 / static_cast<int>(sizeof(V)));
// Elements folded into lanes between flushes into the partial (bounds float32 sum error).
inline constexpr int64_t kBlock = 2048;
// The same for strided spans, which have only four lanes.
inline constexpr int64_t kStridedBlock = 256;
// Rows accumulated into column lanes between flushes.
inline constexpr int64_t kRowBlock = 64;
// Column lanes per chunk in the column engine.
inline constexpr int64_t kColumnChunk = 512;
// Narrower kept innermost dimensions reduce through the row engine instead.
inline constexpr int64_t kMinColumnWidth = 16;

template <typename Op, typename T>
inline void fold_into_lanes(typename Op::V* acc, const T* x, int64_t n) {
  using V = typename Op::V;
  constexpr int U = kLanes<V>;
  int64_t i = 0;
  for (; i + U <= n; i += U) {
    for (int j = 0; j < U; ++j) {
      acc[j] = Op::apply(acc[j], load<Op>(x[i + j]));
    }
  }
  for (int j = 0; i < n; ++i, ++j) {
    acc[j] = Op::apply(acc[j], load<Op>(x[i]));
  }
}

// Folds n contiguous elements.
template <typename Op, typename In>
typename Op::P reduce_span(const In* x, int64_t n) {
  using V = typename Op::V;
  using P = typename Op::P;
  constexpr int U = kLanes<V>;
  if (n < U) {
    V acc = Op::init();
    for (int64_t i = 0; i < n; ++i) {
      acc = Op::apply(acc, load<Op>(static_cast<compute_t<In>>(x[i])));
    }
    return static_cast<P>(acc);
  }
  P total = static_cast<P>(Op::init());
  alignas(64) V acc[U];
  for (int64_t b = 0; b < n; b += kBlock) {
    int64_t m = std::min(kBlock, n - b);
    std::fill(acc, acc + U, Op::init());
    if constexpr (is_half_v<In>) {
      alignas(64) float buf[kBlock];
      to_float(x + b, buf, m);
      fold_into_lanes<Op>(acc, buf, m);
    } else {
      fold_into_lanes<Op>(acc, x + b, m);
    }
    for (int w = U / 2; w > 0; w /= 2) {
      for (int j = 0; j < w; ++j) {
        acc[j] = Op::apply(acc[j], acc[j + w]);
      }
    }
    total = Op::apply(total, static_cast<P>(acc[0]));
  }
  return total;
}

// Folds n elements `stride` apart.
template <typename Op, typename In>
typename Op::P reduce_span_strided(const In* x, int64_t n, int64_t stride) {
  using V = typename Op::V;
  using P = typename Op::P;
  P total = static_cast<P>(Op::init());
  for (int64_t b = 0; b < n; b += kStridedBlock) {
    int64_t e = std::min(n, b + kStridedBlock);
    V acc[4] = {Op::init(), Op::init(), Op::init(), Op::init()};
    int64_t i = b;
    for (; i + 4 <= e; i += 4) {
      for (int k = 0; k < 4; ++k) {
        acc[k] = Op::apply(acc[k], load<Op>(static_cast<compute_t<In>>(x[(i + k) * stride])));
      }
    }
    for (; i < e; ++i) {
      acc[0] = Op::apply(acc[0], load<Op>(static_cast<compute_t<In>>(x[i * stride])));
    }
    V r = Op::apply(Op::apply(acc[0], acc[1]), Op::apply(acc[2], acc[3]));
    total = Op::apply(total, static_cast<P>(r));
  }
  return total;
}

// Splits [0, n) into chunks of at least `grain` across threads, folds each with
// fn(begin, end) -> P, and combines the results in order.
template <typename Op, typename F>
typename Op::P parallel_fold(int64_t n, int64_t grain, F&& fn) {
  using P = typename Op::P;
  int64_t chunks = std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, 4 * num_threads());
  if (chunks == 1) {
    return fn(int64_t{0}, n);
  }
  // Not std::vector: vector<bool> packs bits, which threads cannot write independently.
  std::unique_ptr<P[]> parts(new P[chunks]);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      parts[c] = fn(n * c / chunks, n * (c + 1) / chunks);
    }
  });
  P r = parts[0];
  for (int64_t c = 1; c < chunks; ++c) {
    r = Op::apply(r, parts[c]);
  }
  return r;
}

// ---------------------------------------------------------------------------------------
// Layout.

// ---------------------------------------------------------------------------------------
// Engines.

template <typename Op, typename In, typename Out>
void reduce_rows(const In* src, Out* dst, const ReducePlan& p) {
  using P = typename Op::P;
  const int64_t len = p.rshape.back();
  const int64_t stride = p.rin.back();
  const Shape mshape(p.rshape.begin(), p.rshape.end() - 1);
  const std::array<Strides, 1> mstrides{Strides(p.rin.begin(), p.rin.end() - 1)};
  const int64_t spans = reduce_plan_size(mshape);
  const int64_t outputs = reduce_plan_size(p.kshape);
  const std::array<Strides, 2> kstrides{p.kin, p.kout};

  auto span = [&](const In* x, int64_t n) {
    return stride == 1 ? reduce_span<Op>(x, n) : reduce_span_strided<Op>(x, n, stride);
  };
  // Folds spans [m0, m1) of the output whose first element is x.
  auto fold_spans = [&](const In* x, int64_t m0, int64_t m1) {
    P acc = static_cast<P>(Op::init());
    Walker<1> w(mshape, mstrides, m0);
    for (int64_t m = m0; m < m1; ++m, w.next()) {
      acc = Op::apply(acc, span(x + w.offset(), len));
    }
    return acc;
  };

  const int64_t per_output = spans * len * static_cast<int64_t>(sizeof(In));
  const int threads = num_threads();
  if (outputs >= 2 * threads || per_output * outputs < 4 * kParallelBytes) {
    int64_t grain = std::max<int64_t>(1, kParallelBytes / std::max<int64_t>(per_output, 1));
    parallel_for(outputs, grain, [&](int64_t o0, int64_t o1) {
      Walker<2> w(p.kshape, kstrides, o0);
      for (int64_t o = o0; o < o1; ++o, w.next()) {
        dst[w.offset(1)] = cast_value<Out>(fold_spans(src + w.offset(0), 0, spans));
      }
    });
    return;
  }
  // Few large outputs: split each one's work across threads.
  Walker<2> w(p.kshape, kstrides);
  for (int64_t o = 0; o < outputs; ++o, w.next()) {
    const In* x = src + w.offset(0);
    P r;
    if (spans > 1) {
      int64_t grain = std::max<int64_t>(1, kParallelBytes / (len * sizeof(In)));
      r = parallel_fold<Op>(spans, grain,
                            [&](int64_t m0, int64_t m1) { return fold_spans(x, m0, m1); });
    } else {
      r = parallel_fold<Op>(len, kParallelBytes / sizeof(In),
                            [&](int64_t b, int64_t e) { return span(x + b * stride, e - b); });
    }
    dst[w.offset(1)] = cast_value<Out>(r);
  }
}

// lanes[j] op= rows[r][j] for n <= 4 rows of w elements, four rows per pass over the lanes.
template <typename Op, typename T>
inline void add_rows(typename Op::V* lanes, const T* const* rows, int n, int64_t w) {
  using V = typename Op::V;
  if constexpr (is_half_v<T>) {
    alignas(64) float buf[4][kColumnChunk];
    const float* conv[4] = {buf[0], buf[1], buf[2], buf[3]};
    for (int64_t c = 0; c < w; c += kColumnChunk) {
      int64_t cw = std::min(kColumnChunk, w - c);
      for (int r = 0; r < n; ++r) {
        to_float(rows[r] + c, buf[r], cw);
      }
      add_rows<Op>(lanes + c, conv, n, cw);
    }
  } else if (n == 4) {
    const T *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
    for (int64_t j = 0; j < w; ++j) {
      V a = Op::apply(load<Op>(r0[j]), load<Op>(r1[j]));
      V b = Op::apply(load<Op>(r2[j]), load<Op>(r3[j]));
      lanes[j] = Op::apply(lanes[j], Op::apply(a, b));
    }
  } else {
    for (int r = 0; r < n; ++r) {
      const T* row = rows[r];
      for (int64_t j = 0; j < w; ++j) {
        lanes[j] = Op::apply(lanes[j], load<Op>(row[j]));
      }
    }
  }
}

// Outputs up to this many are reduced by splitting the rows across threads (each thread
// streams a contiguous block and keeps partial results for every output).
inline constexpr int64_t kMaxRowSplitOutputs = 65536;

template <typename Op, typename In, typename Out>
void reduce_columns(const In* src, Out* dst, const ReducePlan& p) {
  using V = typename Op::V;
  using P = typename Op::P;
  const int64_t width = p.kshape.back();
  const int64_t out_step = p.kout.back();
  const Shape oshape(p.kshape.begin(), p.kshape.end() - 1);
  const std::array<Strides, 2> ostrides{Strides(p.kin.begin(), p.kin.end() - 1),
                                        Strides(p.kout.begin(), p.kout.end() - 1)};
  const std::array<Strides, 1> rstrides{p.rin};
  const int64_t outer = reduce_plan_size(oshape);
  const int64_t rows = reduce_plan_size(p.rshape);

  // part[j] op= column j of rows [m0, m1), for the w columns starting at x, accumulating
  // kRowBlock rows at a time in `lanes` (w values).
  auto accumulate = [&](const In* x, int64_t m0, int64_t m1, int64_t w, V* lanes, P* part) {
    Walker<1> rw(p.rshape, rstrides, m0);
    for (int64_t b = m0; b < m1; b += kRowBlock) {
      int64_t e = std::min(m1, b + kRowBlock);
      std::fill(lanes, lanes + w, Op::init());
      for (int64_t m = b; m < e;) {
        int n = static_cast<int>(std::min<int64_t>(4, e - m));
        const In* rows4[4];
        for (int r = 0; r < n; ++r, rw.next()) {
          rows4[r] = x + rw.offset();
        }
        add_rows<Op>(lanes, rows4, n, w);
        m += n;
      }
      for (int64_t j = 0; j < w; ++j) {
        part[j] = Op::apply(part[j], static_cast<P>(lanes[j]));
      }
    }
  };
  auto write = [&](Out* d, const P* part, int64_t w) {
    for (int64_t j = 0; j < w; ++j) {
      d[j * out_step] = cast_value<Out>(part[j]);
    }
  };

  const int threads = num_threads();
  const int64_t chunks = (width + kColumnChunk - 1) / kColumnChunk;
  const int64_t tasks = outer * chunks;
  const int64_t outputs = outer * width;
  const int64_t total_bytes = rows * outputs * static_cast<int64_t>(sizeof(In));
  const bool small = total_bytes < 4 * kParallelBytes;
  const bool split_rows =
      !small && rows >= 2 &&
      ((outputs <= kMaxRowSplitOutputs && rows >= 2 * threads) || tasks < 2 * threads);
  if (!split_rows) {
    // Independent column chunks in parallel, each over all rows.
    int64_t task_bytes = rows * std::min(width, kColumnChunk) * sizeof(In);
    int64_t grain = std::max<int64_t>(1, kParallelBytes / std::max<int64_t>(task_bytes, 1));
    parallel_for(tasks, grain, [&](int64_t t0, int64_t t1) {
      alignas(64) V lanes[kColumnChunk];
      P part[kColumnChunk];
      for (int64_t t = t0; t < t1; ++t) {
        int64_t o = t / chunks, c0 = (t % chunks) * kColumnChunk;
        int64_t w = std::min(kColumnChunk, width - c0);
        Walker<2> ow(oshape, ostrides, o);
        std::fill(part, part + w, static_cast<P>(Op::init()));
        accumulate(src + ow.offset(0) + c0, 0, rows, w, lanes, part);
        write(dst + ow.offset(1) + c0 * out_step, part, w);
      }
    });
    return;
  }
  // Rows split across threads, each with partials for every output, combined in order.
  const int64_t row_grain =
      std::max<int64_t>(1, kParallelBytes / (outputs * static_cast<int64_t>(sizeof(In))));
  const int64_t parts_n = std::clamp<int64_t>(rows / row_grain, 1, threads);
  // Not std::vector: vector<bool> packs bits, which threads cannot write independently.
  std::unique_ptr<P[]> parts(new P[parts_n * outputs]);
  std::fill(parts.get(), parts.get() + parts_n * outputs, static_cast<P>(Op::init()));
  parallel_for(parts_n, 1, [&](int64_t q0, int64_t q1) {
    std::unique_ptr<V[]> lanes(new V[width]);
    for (int64_t q = q0; q < q1; ++q) {
      int64_t m0 = rows * q / parts_n, m1 = rows * (q + 1) / parts_n;
      Walker<2> ow(oshape, ostrides);
      for (int64_t o = 0; o < outer; ++o, ow.next()) {
        accumulate(src + ow.offset(0), m0, m1, width, lanes.get(),
                   parts.get() + q * outputs + o * width);
      }
    }
  });
  for (int64_t q = 1; q < parts_n; ++q) {
    for (int64_t i = 0; i < outputs; ++i) {
      parts[i] = Op::apply(parts[i], parts[q * outputs + i]);
    }
  }
  Walker<2> ow(oshape, ostrides);
  for (int64_t o = 0; o < outer; ++o, ow.next()) {
    write(dst + ow.offset(1), parts.get() + o * width, width);
  }
}

// Reduces `axes` of `in` into `out` (keepdims shape), allocating out.
template <typename Op, typename In, typename Out>
void reduce(const array& in, array& out, const std::vector<int>& axes) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  Out* dst = out.data<Out>();
  if (in.size() == 0) {
    std::fill(dst, dst + out.size(), cast_value<Out>(static_cast<typename Op::P>(Op::init())));
    return;
  }
  ReducePlan p = make_reduce_plan(in, out, axes);
  if (p.rshape.empty()) {
    // Only size-1 axes are reduced: the output is the input, converted.
    copy_strided(in, in.strides(), 0, out, out.strides(), 0, in.shape());
    return;
  }
  const In* src = in.data<In>() + p.in_offset;
  dst += p.out_offset;
  if (!p.kshape.empty() && p.kin.back() == 1 && p.kshape.back() >= kMinColumnWidth) {
    reduce_columns<Op, In, Out>(src, dst, p);
  } else {
    reduce_rows<Op, In, Out>(src, dst, p);
  }
}

// Max / Min reductions (reduce_minmax.cpp).
void reduce_min_max(const array& in, array& out, Reduce::ReduceType type,
                    const std::vector<int>& axes);

}  // namespace mlx::core::cpu
