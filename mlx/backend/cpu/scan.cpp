// Cumulative reductions along one axis. When a unit-stride dimension other than the scanned
// axis exists, whole rows are scanned at once with vector ops (column mode); otherwise each
// line along the axis is scanned on its own. Lines / column chunks run in parallel.
#include <cmath>
#include <memory>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/cpu/reduce.h"
#include "mlx/backend/cpu/strided.h"

namespace mlx::core {

namespace {

using namespace cpu;

// log(exp(a) + exp(b)) without overflow; -inf is the identity.
template <typename V_>
struct LogAddExpOp {
  using V = V_;
  using P = V;
  static V init() { return -std::numeric_limits<V>::infinity(); }
  template <typename T>
  static T apply(T a, T b) {
    if (a != a || b != b) {
      return a + b;
    }
    T hi = a > b ? a : b;
    T lo = a > b ? b : a;
    if (lo == -std::numeric_limits<T>::infinity() || hi == std::numeric_limits<T>::infinity()) {
      return hi;
    }
    return hi + std::log1p(std::exp(lo - hi));
  }
};

struct ScanParams {
  int64_t n;  // length of the axis
  int64_t in_stride, out_stride;
  bool reverse, inclusive;
};

// Scans one line: n elements `in_stride` apart into elements `out_stride` apart. Cheap ops
// take four elements per step, combining them among themselves first, so that the
// dependency through the accumulator is one op per four elements instead of four.
template <typename Op, typename In, typename Out>
void scan_line(const In* x, Out* y, const ScanParams& sp) {
  using V = typename Op::V;
  const int64_t n = sp.n;
  auto in = [&](int64_t k) {
    return load<Op>(static_cast<compute_t<In>>(x[(sp.reverse ? n - 1 - k : k) * sp.in_stride]));
  };
  auto out = [&](int64_t k, V v) {
    y[(sp.reverse ? n - 1 - k : k) * sp.out_stride] = cast_value<Out>(v);
  };
  V acc = Op::init();
  int64_t k = 0;
  if constexpr (!std::is_same_v<Op, LogAddExpOp<V>>) {
    for (; k + 4 <= n; k += 4) {
      V v0 = in(k), v1 = in(k + 1), v2 = in(k + 2), v3 = in(k + 3);
      V t1 = Op::apply(v0, v1);
      V t2 = Op::apply(t1, v2);
      V t3 = Op::apply(t1, Op::apply(v2, v3));
      if (sp.inclusive) {
        out(k, Op::apply(acc, v0));
        out(k + 1, Op::apply(acc, t1));
        out(k + 2, Op::apply(acc, t2));
        out(k + 3, Op::apply(acc, t3));
      } else {
        out(k, acc);
        out(k + 1, Op::apply(acc, v0));
        out(k + 2, Op::apply(acc, t1));
        out(k + 3, Op::apply(acc, t2));
      }
      acc = Op::apply(acc, t3);
    }
  }
  for (; k < n; ++k) {
    V v = in(k);
    if (sp.inclusive) {
      acc = Op::apply(acc, v);
      out(k, acc);
    } else {
      out(k, acc);
      acc = Op::apply(acc, v);
    }
  }
}

// Scans w unit-stride columns at once.
template <typename Op, typename In, typename Out>
void scan_columns(const In* x, Out* y, int64_t w, const ScanParams& sp) {
  using V = typename Op::V;
  std::unique_ptr<V[]> acc(new V[w]);
  std::unique_ptr<float[]> row(is_half_v<In> ? new float[w] : nullptr);
  std::fill(acc.get(), acc.get() + w, Op::init());
  auto add_row = [&](const In* src) {
    if constexpr (is_half_v<In>) {
      to_float(src, row.get(), w);
      for (int64_t j = 0; j < w; ++j) {
        acc[j] = Op::apply(acc[j], row[j]);
      }
    } else {
      for (int64_t j = 0; j < w; ++j) {
        acc[j] = Op::apply(acc[j], load<Op>(src[j]));
      }
    }
  };
  auto store_row = [&](Out* dst) {
    if constexpr (is_half_v<Out>) {
      from_float(acc.get(), dst, w);
    } else {
      for (int64_t j = 0; j < w; ++j) {
        dst[j] = static_cast<Out>(acc[j]);
      }
    }
  };
  for (int64_t k = 0; k < sp.n; ++k) {
    int64_t i = sp.reverse ? sp.n - 1 - k : k;
    if (sp.inclusive) {
      add_row(x + i * sp.in_stride);
      store_row(y + i * sp.out_stride);
    } else {
      store_row(y + i * sp.out_stride);
      add_row(x + i * sp.in_stride);
    }
  }
}

// Widest column chunks for the scans: long contiguous row pieces stream well.
inline constexpr int64_t kMaxScanChunk = 16384;

template <typename Op, typename In, typename Out>
void scan(const array& in, array& out, int axis, bool reverse, bool inclusive) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  ScanParams sp{in.shape(axis), in.strides()[axis], out.strides()[axis], reverse, inclusive};
  auto layout = collapse_dims_except(in, out, axis);
  const In* src = in.data<In>();
  Out* dst = out.data<Out>();
  const int64_t width = layout.shape.back();
  const int64_t line_bytes = sp.n * static_cast<int64_t>(sizeof(Out));

  if (layout.strides[0].back() == 1 && layout.strides[1].back() == 1 && width >= kMinColumnWidth &&
      sp.in_stride != 1) {
    const int64_t outer = num_rows(layout.shape);
    // As wide as possible while still giving every thread a chunk.
    const int64_t splits = (num_threads() + outer - 1) / outer;
    const int64_t chunk = std::clamp<int64_t>((width + splits - 1) / splits,
                                              std::min(width, kColumnChunk), kMaxScanChunk);
    const int64_t chunks = (width + chunk - 1) / chunk;
    Shape oshape(layout.shape.begin(), layout.shape.end() - 1);
    std::array<Strides, 2> ostrides{
        Strides(layout.strides[0].begin(), layout.strides[0].end() - 1),
        Strides(layout.strides[1].begin(), layout.strides[1].end() - 1)};
    int64_t grain = std::max<int64_t>(1, kParallelBytes / (line_bytes * chunk));
    parallel_for(outer * chunks, grain, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        int64_t o = t / chunks, c0 = (t % chunks) * chunk;
        Walker<2> w(oshape, ostrides, o);
        scan_columns<Op>(src + w.offset(0) + c0, dst + w.offset(1) + c0,
                         std::min(chunk, width - c0), sp);
      }
    });
    return;
  }
  const std::array<Strides, 2> lstrides{layout.strides[0], layout.strides[1]};
  parallel_for(reduce_plan_size(layout.shape), std::max<int64_t>(1, kParallelBytes / line_bytes),
               [&](int64_t o0, int64_t o1) {
                 Walker<2> w(layout.shape, lstrides, o0);
                 for (int64_t o = o0; o < o1; ++o, w.next()) {
                   scan_line<Op>(src + w.offset(0), dst + w.offset(1), sp);
                 }
               });
}

}  // namespace

void Scan::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  auto run = [&]<template <typename> class Op>(const char* name) {
    dispatch_all(in.dtype(), name, [&]<typename T>() {
      using V = compute_t<T>;
      if constexpr (std::is_same_v<T, bool>) {
        // A cumulative sum of booleans counts in int32 (as MLX); other bool scans stay bool.
        if (out.dtype() == int32) {
          return scan<Op<int32_t>, bool, int32_t>(in, out, axis_, reverse_, inclusive_);
        }
      }
      scan<Op<V>, T, T>(in, out, axis_, reverse_, inclusive_);
    });
  };
  switch (type_) {
    case Sum:
      return run.template operator()<SumOp>("cumsum");
    case Prod:
      return run.template operator()<ProdOp>("cumprod");
    case Max:
      return run.template operator()<MaxOp>("cummax");
    case Min:
      return run.template operator()<MinOp>("cummin");
    case LogAddExp:
      dispatch_float(in.dtype(), "logcumsumexp", [&]<typename T>() {
        scan<LogAddExpOp<compute_t<T>>, T, T>(in, out, axis_, reverse_, inclusive_);
      });
      return;
  }
}

}  // namespace mlx::core
