// CPU sort, argsort, partition and argpartition along one axis. Each lane (the elements along
// the axis at one position of the other axes) is copied to a scratch buffer, NaNs are moved to
// its end, and the rest is sorted with std::sort. argsort sorts (key, index) pairs, which makes
// it stable. Lanes run in parallel; a few very long lanes use a parallel merge sort instead.
#include <algorithm>
#include <cmath>

#include "mlx/backend/cpu/dispatch.h"
#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/indexing.h"

namespace mlx::core {

namespace {

using namespace cpu;

// Lanes at least this long are sorted by all threads together when there are few lanes.
constexpr int64_t kParallelSortMin = 1 << 16;
// Lanes per block when the axis is strided: reading a block walks memory row by row.
constexpr int64_t kLaneBlock = 16;

template <typename T>
using Key =
    std::conditional_t<std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>, float, T>;

template <typename K>
bool key_is_nan(K x) {
  if constexpr (std::is_floating_point_v<K>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// NaN-aware order of floats (NaN after everything), used for complex parts.
inline bool lt_nan(float a, float b) { return a < b || (std::isnan(b) && !std::isnan(a)); }
inline bool eq_nan(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Strict order of keys; floating-point keys are never NaN here.
template <typename K>
bool key_less(const K& a, const K& b) {
  if constexpr (std::is_same_v<K, complex64_t>) {
    return lt_nan(a.real(), b.real()) || (eq_nan(a.real(), b.real()) && lt_nan(a.imag(), b.imag()));
  } else {
    return a < b;
  }
}

// Sorts with std::sort on chunks in parallel, then merges pairs of runs level by level.
template <typename E, typename Cmp>
void parallel_sort(E* data, int64_t n, Cmp cmp, std::vector<E>& tmp) {
  int64_t chunks = num_threads();
  if (chunks == 1 || n < kParallelSortMin) {
    std::sort(data, data + n, cmp);
    return;
  }
  auto bound = [&](int64_t c) { return n * std::min(c, chunks) / chunks; };
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      std::sort(data + bound(c), data + bound(c + 1), cmp);
    }
  });
  tmp.resize(n);
  E* from = data;
  E* to = tmp.data();
  for (int64_t width = 1; width < chunks; width *= 2) {
    int64_t pairs = (chunks + 2 * width - 1) / (2 * width);
    parallel_for(pairs, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        int64_t lo = bound(2 * p * width);
        int64_t mid = bound((2 * p + 1) * width);
        int64_t hi = bound((2 * p + 2) * width);
        std::merge(from + lo, from + mid, from + mid, from + hi, to + lo, cmp);
      }
    });
    std::swap(from, to);
  }
  if (from != data) {
    std::copy(from, from + n, data);
  }
}

// Sorts or partitions one contiguous lane of n elements from src into dst. Keeps its scratch
// buffers between lanes.
template <typename T, SortKind kind>
class LaneSorter {
 public:
  static constexpr bool kArg = kind == SortKind::ArgSort || kind == SortKind::ArgPartition;
  static constexpr bool kFull = kind == SortKind::Sort || kind == SortKind::ArgSort;
  using K = Key<T>;
  using Out = std::conditional_t<kArg, uint32_t, T>;

  explicit LaneSorter(int64_t kth) : kth_(kth) {}

  void operator()(const T* src, Out* dst, int64_t n, bool parallel) {
    if constexpr (kArg) {
      items_.resize(n);
      Item* it = items_.data();
      // Non-NaN keys first, then NaNs, both in index order.
      int64_t m = 0;
      for (int64_t k = 0; k < n; ++k) {
        K x = static_cast<K>(src[k]);
        if (!key_is_nan(x)) {
          it[m++] = Item{x, static_cast<uint32_t>(k)};
        }
      }
      for (int64_t k = 0, j = m; j < n; ++k) {
        K x = static_cast<K>(src[k]);
        if (key_is_nan(x)) {
          it[j++] = Item{x, static_cast<uint32_t>(k)};
        }
      }
      // Ties break by index: a total order, so std::sort gives a stable argsort.
      auto cmp = [](const Item& a, const Item& b) {
        return key_less(a.key, b.key) || (!key_less(b.key, a.key) && a.idx < b.idx);
      };
      order(it, m, cmp, parallel, tmp_items_);
      for (int64_t k = 0; k < n; ++k) {
        dst[k] = it[k].idx;
      }
    } else {
      keys_.resize(n);
      K* ks = keys_.data();
      for (int64_t k = 0; k < n; ++k) {
        ks[k] = static_cast<K>(src[k]);
      }
      int64_t m = n;
      if constexpr (std::is_floating_point_v<K>) {
        m = std::partition(ks, ks + n, [](K x) { return !std::isnan(x); }) - ks;
      }
      order(
          ks, m, [](const K& a, const K& b) { return key_less(a, b); }, parallel, tmp_keys_);
      for (int64_t k = 0; k < n; ++k) {
        dst[k] = static_cast<T>(ks[k]);
      }
    }
  }

 private:
  struct Item {
    K key;
    uint32_t idx;
  };

  // Sorts or partitions the m non-NaN elements (the NaNs after them are already in place).
  template <typename E, typename Cmp>
  void order(E* data, int64_t m, Cmp cmp, bool parallel, std::vector<E>& tmp) {
    if constexpr (kFull) {
      if (parallel) {
        parallel_sort(data, m, cmp, tmp);
      } else {
        std::sort(data, data + m, cmp);
      }
    } else if (kth_ < m) {
      std::nth_element(data, data + kth_, data + m, cmp);
    }
  }

  int64_t kth_;
  std::vector<K> keys_;
  std::vector<K> tmp_keys_;
  std::vector<Item> items_;
  std::vector<Item> tmp_items_;
};

template <typename T, SortKind kind>
void sort_lanes(const array& in, array& out, int axis, int64_t kth) {
  using Sorter = LaneSorter<T, kind>;
  using Out = typename Sorter::Out;
  int64_t n = in.shape(axis);
  int64_t lanes = static_cast<int64_t>(in.size()) / n;
  int64_t a_stride = in.strides()[axis];
  int64_t o_stride = out.strides()[axis];
  Shape rest = in.shape();
  Strides in_rest = in.strides();
  Strides out_rest = out.strides();
  rest.erase(rest.begin() + axis);
  in_rest.erase(in_rest.begin() + axis);
  out_rest.erase(out_rest.begin() + axis);
  auto layout = collapse_dims<2>(rest, {in_rest, out_rest});
  int64_t len = layout.shape.back();
  int64_t sa = layout.strides[0].back();
  int64_t so = layout.strides[1].back();
  // Lanes contiguous in both arrays are sorted in place; others go through a staging block.
  bool direct = a_stride == 1 && o_stride == 1;
  int64_t block = direct ? 1 : kLaneBlock;
  const T* ib = in.data<T>();
  Out* ob = out.data<Out>();

  // Lanes [u0, u1) in the order of the collapsed layout.
  auto run = [&](int64_t u0, int64_t u1, bool parallel) {
    Sorter sorter(kth);
    std::vector<T> stage_in(direct ? 0 : block * n);
    std::vector<Out> stage_out(direct ? 0 : block * n);
    int64_t r0 = u0 / len;
    int64_t r = r0;
    for_each_row(layout, r0, (u1 + len - 1) / len, [&](const std::array<int64_t, 2>& o) {
      int64_t p1 = std::min(len, u1 - r * len);
      for (int64_t p = r == r0 ? u0 - r0 * len : 0; p < p1; p += block) {
        int64_t nb = std::min(block, p1 - p);
        const T* s = ib + o[0] + p * sa;
        Out* d = ob + o[1] + p * so;
        if (direct) {
          sorter(s, d, n, parallel);
          continue;
        }
        for (int64_t k = 0; k < n; ++k) {
          for (int64_t b = 0; b < nb; ++b) {
            stage_in[b * n + k] = s[b * sa + k * a_stride];
          }
        }
        for (int64_t b = 0; b < nb; ++b) {
          sorter(stage_in.data() + b * n, stage_out.data() + b * n, n, parallel);
        }
        for (int64_t k = 0; k < n; ++k) {
          for (int64_t b = 0; b < nb; ++b) {
            d[b * so + k * o_stride] = stage_out[b * n + k];
          }
        }
      }
      ++r;
    });
  };

  constexpr bool full = kind == SortKind::Sort || kind == SortKind::ArgSort;
  if (full && n >= kParallelSortMin && lanes < num_threads()) {
    run(0, lanes, true);
  } else {
    parallel_for(lanes, std::max<int64_t>(1, (int64_t{1} << 15) / n),
                 [&](int64_t u0, int64_t u1) { run(u0, u1, false); });
  }
}

}  // namespace

void SortAlongAxis::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.is_donatable() && in.flags().row_contiguous && in.itemsize() == out.itemsize()) {
    out.copy_shared_buffer(in);  // each lane is read completely before it is written
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
  }
  if (out.size() == 0) {
    return;
  }
  // bools order like their bytes; this also keeps std::vector<bool> out of the scratch buffers.
  dispatch_all(in.dtype(), name(), [&]<typename V>() {
    using T = std::conditional_t<std::is_same_v<V, bool>, uint8_t, V>;
    switch (kind_) {
      case SortKind::Sort:
        return sort_lanes<T, SortKind::Sort>(in, out, axis_, kth_);
      case SortKind::ArgSort:
        return sort_lanes<T, SortKind::ArgSort>(in, out, axis_, kth_);
      case SortKind::Partition:
        return sort_lanes<T, SortKind::Partition>(in, out, axis_, kth_);
      case SortKind::ArgPartition:
        return sort_lanes<T, SortKind::ArgPartition>(in, out, axis_, kth_);
    }
  });
}

}  // namespace mlx::core
