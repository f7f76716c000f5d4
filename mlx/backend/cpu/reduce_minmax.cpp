// Max / min reductions (the engine in reduce.h) and ArgReduce::eval_cpu.
#include "mlx/backend/cpu/reduce.h"
#include "mlx/backend/cpu/strided.h"

namespace mlx::core {

namespace cpu {

void reduce_min_max(const array& in, array& out, Reduce::ReduceType type,
                    const std::vector<int>& axes) {
  const char* name = type == Reduce::Max ? "max" : "min";
  dispatch_all(in.dtype(), name, [&]<typename T>() {
    using V = compute_t<T>;
    if (type == Reduce::Max) {
      reduce<MaxOp<V>, T, T>(in, out, axes);
    } else {
      reduce<MinOp<V>, T, T>(in, out, axes);
    }
  });
}

}  // namespace cpu

namespace {

using namespace cpu;

// Whether v replaces the current best: strictly better (ties keep the first index), and the
// first NaN wins over everything, as in NumPy.
template <bool kMax, typename V>
inline bool better(V v, V best) {
  bool strict = kMax ? v > best : v < best;
  if constexpr (std::is_floating_point_v<V>) {
    return strict || (v != v && best == best);
  } else {
    return strict;
  }
}

template <typename V>
struct Best {
  V value;
  uint32_t index;
};

// Unit-stride spans are scanned in blocks: a vectorized max / min of the block, and only when
// it beats the best so far, a search for its first occurrence.
inline constexpr int64_t kArgBlock = 1024;

// Best of n elements `stride` apart, the first being element `first` of its axis.
template <bool kMax, typename T>
Best<compute_t<T>> arg_span(const T* x, int64_t n, int64_t stride, int64_t first) {
  using V = compute_t<T>;
  Best<V> b{static_cast<V>(x[0]), static_cast<uint32_t>(first)};
  if (stride == 1) {
    using Op = std::conditional_t<kMax, MaxOp<V>, MinOp<V>>;
    for (int64_t s = 0; s < n; s += kArgBlock) {
      int64_t m = std::min(kArgBlock, n - s);
      V bm = reduce_span<Op>(x + s, m);
      if (better<kMax>(bm, b.value)) {
        bool nan = bm != bm;
        for (int64_t i = 0; i < m; ++i) {
          V v = static_cast<V>(x[s + i]);
          if (nan ? v != v : v == bm) {
            b = {bm, static_cast<uint32_t>(first + s + i)};
            break;
          }
        }
      }
    }
    return b;
  }
  for (int64_t i = 1; i < n; ++i) {
    V v = static_cast<V>(x[i * stride]);
    if (better<kMax>(v, b.value)) {
      b = {v, static_cast<uint32_t>(first + i)};
    }
  }
  return b;
}

// Column mode: for w unit-stride columns at x, the best over n rows `stride` apart.
template <bool kMax, typename T>
void arg_columns(const T* x, int64_t n, int64_t stride, int64_t w, uint32_t* out) {
  using V = compute_t<T>;
  alignas(64) V best[kColumnChunk];
  alignas(64) uint32_t index[kColumnChunk];
  alignas(64) V row[kColumnChunk];
  auto load_row = [&](const T* r) {
    if constexpr (is_half_v<T>) {
      to_float(r, row, w);
    } else {
      std::copy(r, r + w, row);
    }
  };
  load_row(x);
  std::copy(row, row + w, best);
  std::fill(index, index + w, 0u);
  for (int64_t i = 1; i < n; ++i) {
    load_row(x + i * stride);
    uint32_t ii = static_cast<uint32_t>(i);
    for (int64_t j = 0; j < w; ++j) {
      bool b = better<kMax>(row[j], best[j]);
      best[j] = b ? row[j] : best[j];
      index[j] = b ? ii : index[j];
    }
  }
  std::copy(index, index + w, out);
}

template <bool kMax, typename T>
void arg_reduce(const array& in, array& out, int axis) {
  using V = compute_t<T>;
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  const int64_t n = in.shape(axis);
  const int64_t stride = in.strides()[axis];
  if (n == 0) {
    throw std::invalid_argument("[argreduce] Cannot reduce a zero-size axis.");
  }
  auto layout = collapse_dims_except(in, out, axis);
  const T* src = in.data<T>();
  uint32_t* dst = out.data<uint32_t>();
  const int64_t width = layout.shape.back();
  const int64_t outputs = static_cast<int64_t>(out.size());
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / (n * sizeof(T)));

  if (layout.strides[0].back() == 1 && layout.strides[1].back() == 1 && width >= kMinColumnWidth &&
      stride != 1) {
    const int64_t rows = num_rows(layout.shape);
    const int64_t chunks = (width + kColumnChunk - 1) / kColumnChunk;
    Shape oshape(layout.shape.begin(), layout.shape.end() - 1);
    std::array<Strides, 2> ostrides{
        Strides(layout.strides[0].begin(), layout.strides[0].end() - 1),
        Strides(layout.strides[1].begin(), layout.strides[1].end() - 1)};
    int64_t task_grain = std::max<int64_t>(1, grain / std::min(width, kColumnChunk));
    parallel_for(rows * chunks, task_grain, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        int64_t o = t / chunks, c0 = (t % chunks) * kColumnChunk;
        Walker<2> w(oshape, ostrides, o);
        arg_columns<kMax>(src + w.offset(0) + c0, n, stride, std::min(kColumnChunk, width - c0),
                          dst + w.offset(1) + c0);
      }
    });
    return;
  }
  const std::array<Strides, 2> lstrides{layout.strides[0], layout.strides[1]};
  if (outputs >= 2 * num_threads() || n * static_cast<int64_t>(sizeof(T)) < 4 * kParallelBytes) {
    parallel_for(outputs, grain, [&](int64_t o0, int64_t o1) {
      Walker<2> w(layout.shape, lstrides, o0);
      for (int64_t o = o0; o < o1; ++o, w.next()) {
        dst[w.offset(1)] = arg_span<kMax>(src + w.offset(0), n, stride, 0).index;
      }
    });
    return;
  }
  // Few long axes: split each across threads and keep the first best of the pieces.
  Walker<2> w(layout.shape, lstrides);
  for (int64_t o = 0; o < outputs; ++o, w.next()) {
    const T* x = src + w.offset(0);
    int64_t chunks = std::clamp<int64_t>(n * sizeof(T) / kParallelBytes, 1, 4 * num_threads());
    std::vector<Best<V>> parts(chunks);
    parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        int64_t b = n * c / chunks, e = n * (c + 1) / chunks;
        parts[c] = arg_span<kMax>(x + b * stride, e - b, stride, b);
      }
    });
    Best<V> best = parts[0];
    for (int64_t c = 1; c < chunks; ++c) {
      if (better<kMax>(parts[c].value, best.value)) {
        best = parts[c];
      }
    }
    dst[w.offset(1)] = best.index;
  }
}

}  // namespace

void ArgReduce::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  dispatch_all(in.dtype(), name(), [&]<typename T>() {
    if (type_ == ArgMax) {
      arg_reduce<true, T>(in, out, axis_);
    } else {
      arg_reduce<false, T>(in, out, axis_);
    }
  });
}

}  // namespace mlx::core
