// CPU sort, argsort, partition and argpartition along one axis. Each lane (the elements along
// the axis at one position of the other axes) is copied to a scratch buffer of keys: real
// dtypes become unsigned integers in the same order (NaN largest), so long lanes can be radix
// sorted; complex numbers keep a NaN-aware lexicographic comparison. argsort sorts
// (key, index) items whose ties break by index, which makes it stable. Lanes run in parallel;
// a few very long lanes are sorted in chunks by all threads and then merged.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/common/sort_keys.h"
#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/indexing.h"

namespace mlx::core {

namespace {

using namespace cpu;

// Lanes at least this long are sorted by all threads together when there are few lanes.
constexpr int64_t kParallelSortMin = 1 << 16;
// Shorter lanes use std::sort: the radix histograms would cost more than they save.
constexpr int64_t kRadixMin = 512;
// Lanes per block when the axis is strided: reading a block walks memory row by row.
constexpr int64_t kLaneBlock = 16;

template <typename T>
constexpr SortKeyKind sort_key_kind() {
  if constexpr (std::is_same_v<T, float16_t>) {
    return SortKeyKind::float16;
  } else if constexpr (std::is_same_v<T, bfloat16_t>) {
    return SortKeyKind::bfloat16;
  } else if constexpr (std::is_same_v<T, float>) {
    return SortKeyKind::float32;
  } else if constexpr (std::is_same_v<T, double>) {
    return SortKeyKind::float64;
  } else {
    return SortKeyKind::integer;
  }
}

// A real dtype's values as the unsigned keys of backend/common/sort_keys.h.
template <typename T>
struct SortKey {
  using U = SortKeyUInt<sizeof(T)>;
  using Bits = SortKeyOf<U, sort_key_kind<T>(), std::is_signed_v<T>>;

  static U encode(T x, bool merge_zeros) {
    U u;
    std::memcpy(&u, &x, sizeof(T));
    return Bits::encode(u, merge_zeros);
  }
  static T decode(U k) {
    k = Bits::decode(k);
    T x;
    std::memcpy(&x, &k, sizeof(T));
    return x;
  }
  static bool less(U a, U b) { return a < b; }
};

// NaN-aware order of floats (NaN after everything).
inline bool lt_nan(float a, float b) { return a < b || (std::isnan(b) && !std::isnan(a)); }
inline bool eq_nan(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

template <>
struct SortKey<complex64_t> {
  using U = complex64_t;
  static U encode(complex64_t x, bool) { return x; }
  static complex64_t decode(U k) { return k; }
  // Lexicographic: real parts first, then imaginary parts.
  static bool less(const U& a, const U& b) {
    return lt_nan(a.real(), b.real()) || (eq_nan(a.real(), b.real()) && lt_nan(a.imag(), b.imag()));
  }
};

// Stable LSD radix sort of n elements by key(e) (an unsigned integer of type U), one byte per
// pass; passes where every key has the same byte are skipped. `tmp` holds n elements.
template <typename U, typename E, typename KeyFn>
void radix_sort(E* data, E* tmp, int64_t n, KeyFn key) {
  constexpr int kPasses = sizeof(U);
  std::vector<int64_t> counts(kPasses * 256, 0);
  for (int64_t i = 0; i < n; ++i) {
    U k = key(data[i]);
    for (int p = 0; p < kPasses; ++p) {
      ++counts[p * 256 + ((k >> (8 * p)) & 0xff)];
    }
  }
  E* src = data;
  E* dst = tmp;
  for (int p = 0; p < kPasses; ++p) {
    int64_t* c = counts.data() + p * 256;
    if (c[(key(src[0]) >> (8 * p)) & 0xff] == n) {
      continue;
    }
    int64_t sum = 0;
    for (int d = 0; d < 256; ++d) {
      int64_t cd = c[d];
      c[d] = sum;
      sum += cd;
    }
    for (int64_t i = 0; i < n; ++i) {
      dst[c[(key(src[i]) >> (8 * p)) & 0xff]++] = src[i];
    }
    std::swap(src, dst);
  }
  if (src != data) {
    std::copy(src, src + n, data);
  }
}

// Sorts [data, data + n) with sort_range on one chunk per thread, then merges neighbouring
// runs level by level (std::merge is stable, so ties keep chunk order).
template <typename E, typename SortRange, typename Cmp>
void parallel_sort(E* data, E* tmp, int64_t n, SortRange sort_range, Cmp cmp) {
  int64_t chunks = num_threads();
  auto bound = [&](int64_t c) { return n * std::min(c, chunks) / chunks; };
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      sort_range(data + bound(c), tmp + bound(c), bound(c + 1) - bound(c));
    }
  });
  E* from = data;
  E* to = tmp;
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

// Sorts or partitions one contiguous lane of n elements from src into dst, keeping its
// scratch buffers between lanes.
template <typename T, SortKind kind>
class LaneSorter {
 public:
  static constexpr bool kArg = kind == SortKind::ArgSort || kind == SortKind::ArgPartition;
  static constexpr bool kFull = kind == SortKind::Sort || kind == SortKind::ArgSort;
  using Out = std::conditional_t<kArg, uint32_t, T>;

  explicit LaneSorter(int64_t kth) : kth_(kth) {}

  void operator()(const T* src, Out* dst, int64_t n, bool parallel) {
    buf_.resize(n);
    E* b = buf_.data();
    for (int64_t k = 0; k < n; ++k) {
      if constexpr (kArg) {
        b[k] = Item{Key::encode(src[k], true), static_cast<uint32_t>(k)};
      } else {
        b[k] = Key::encode(src[k], false);
      }
    }
    if constexpr (kFull) {
      tmp_.resize(n);
      auto sort_range = [this](E* first, E* tmp, int64_t m) { sort_chunk(first, tmp, m); };
      if (parallel && n >= kParallelSortMin && num_threads() > 1) {
        parallel_sort(b, tmp_.data(), n, sort_range, less);
      } else {
        sort_range(b, tmp_.data(), n);
      }
    } else if (kth_ < n) {
      std::nth_element(b, b + kth_, b + n, less);
    }
    for (int64_t k = 0; k < n; ++k) {
      if constexpr (kArg) {
        dst[k] = b[k].idx;
      } else {
        dst[k] = Key::decode(b[k]);
      }
    }
  }

 private:
  using Key = SortKey<T>;
  using U = typename Key::U;
  struct Item {
    U key;
    uint32_t idx;
  };
  using E = std::conditional_t<kArg, Item, U>;

  static const U& key_of(const E& e) {
    if constexpr (kArg) {
      return e.key;
    } else {
      return e;
    }
  }
  // A strict total order: argsort ties break by index.
  static bool less(const E& a, const E& b) {
    if constexpr (kArg) {
      return Key::less(a.key, b.key) || (!Key::less(b.key, a.key) && a.idx < b.idx);
    } else {
      return Key::less(a, b);
    }
  }

  void sort_chunk(E* first, E* tmp, int64_t m) {
    if constexpr (std::is_integral_v<U>) {
      if (m >= kRadixMin) {
        // Stable, and the items start in index order.
        radix_sort<U>(first, tmp, m, [](const E& e) { return key_of(e); });
        return;
      }
    }
    std::sort(first, first + m, less);
  }

  int64_t kth_;
  std::vector<E> buf_;
  std::vector<E> tmp_;
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
  // Lanes contiguous in both arrays are read and written directly; others go through a staging
  // block.
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
