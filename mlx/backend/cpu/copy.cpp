#include "mlx/backend/cpu/copy.h"

#include <algorithm>
#include <cstring>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

namespace {

// Row by row over the collapsed layout, rows spread across threads; converts dtype.
void copy_rows(const array& src, int64_t src_offset, array& dst, int64_t dst_offset,
               const Layout<2>& layout) {
  int64_t rows = num_rows(layout.shape);
  int64_t row_len = layout.shape.back();
  int64_t s_inner = layout.strides[0].back();
  int64_t d_inner = layout.strides[1].back();
  dispatch_pair(src.dtype(), dst.dtype(), "copy", [&]<typename From, typename To>() {
    const From* s = src.data<From>() + src_offset;
    To* d = dst.data<To>() + dst_offset;
    int64_t grain = std::max<int64_t>(1, kParallelBytes / (row_len * sizeof(To) + 1));
    parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
      for_each_row(layout, r0, r1, [&](const std::array<int64_t, 2>& off) {
        convert_row(s + off[0], s_inner, d + off[1], d_inner, row_len);
      });
    });
  });
}

constexpr int64_t kTile = 32;
// Rows shorter than this are copied as 2-D blocks instead of one row at a time.
constexpr int64_t kShortRow = 16;

// Copies rows [k0, k1) of axis k for every l of the last axis: the source is contiguous along k,
// the destination along l. Each kTile x kTile tile is read into a local buffer row by row and
// written out row by row, so both sides move whole cache lines even when power-of-two strides
// map all rows of a tile to the same cache set.
template <typename T>
void copy_tile_rows(const T* src, T* dst, int64_t k0, int64_t k1, int64_t nl, int64_t src_l,
                    int64_t dst_k) {
  T buf[kTile * kTile];
  int64_t nk = k1 - k0;
  for (int64_t l0 = 0; l0 < nl; l0 += kTile) {
    int64_t n = std::min(nl - l0, kTile);
    for (int64_t l = 0; l < n; ++l) {
      const T* s = src + (l0 + l) * src_l + k0;
      for (int64_t k = 0; k < nk; ++k) {
        buf[l * kTile + k] = s[k];
      }
    }
    for (int64_t k = 0; k < nk; ++k) {
      T* d = dst + (k0 + k) * dst_k + l0;
      for (int64_t l = 0; l < n; ++l) {
        d[l] = buf[l * kTile + k];
      }
    }
  }
}

// Rows [i0, i1) of a block of short rows (length n), in one loop nest.
template <typename T>
void copy_short_rows(const T* src, T* dst, int64_t i0, int64_t i1, int64_t n, int64_t src_i,
                     int64_t src_j, int64_t dst_i, int64_t dst_j) {
  for (int64_t i = i0; i < i1; ++i) {
    const T* s = src + i * src_i;
    T* d = dst + i * dst_i;
    for (int64_t j = 0; j < n; ++j) {
      d[j * dst_j] = s[j * src_j];
    }
  }
}

// Splits axis `axis` of the layout into chunks of `chunk` and calls
// fn(src_offset, dst_offset, begin, end) in parallel for every chunk and every index of the
// axes other than `axis` and the last one. Offsets count elements from the operands' starts.
template <typename F>
void for_each_chunk(const Layout<2>& layout, int axis, int64_t chunk, int64_t itemsize, F&& fn) {
  int nd = static_cast<int>(layout.shape.size());
  Layout<2> outer;  // the other axes, walked with for_each_row over a trailing unit axis
  for (int d = 0; d < nd - 1; ++d) {
    if (d != axis) {
      outer.shape.push_back(layout.shape[d]);
      outer.strides[0].push_back(layout.strides[0][d]);
      outer.strides[1].push_back(layout.strides[1][d]);
    }
  }
  outer.shape.push_back(1);
  outer.strides[0].push_back(0);
  outer.strides[1].push_back(0);
  int64_t n = layout.shape[axis];
  int64_t chunks = (n + chunk - 1) / chunk;
  int64_t items = num_rows(outer.shape) * chunks;
  int64_t item_bytes = std::min(chunk, n) * layout.shape.back() * itemsize;
  int64_t grain = std::max<int64_t>(1, kParallelBytes / item_bytes);
  // Items are (outer row, chunk) pairs; one for_each_row walk per range of items.
  parallel_for(items, grain, [&](int64_t b, int64_t e) {
    int64_t row = b / chunks;
    for_each_row(outer, row, (e - 1) / chunks + 1, [&](const std::array<int64_t, 2>& off) {
      int64_t c0 = std::max(b, row * chunks) - row * chunks;
      int64_t c1 = std::min(e, (row + 1) * chunks) - row * chunks;
      for (int64_t c = c0; c < c1; ++c) {
        fn(off[0], off[1], c * chunk, std::min(n, (c + 1) * chunk));
      }
      ++row;
    });
  });
}

// Same-dtype layouts that copy_strided walks slowly: a transpose (the source contiguous along
// another axis than the destination), or many short rows. Returns false for other layouts.
bool copy_blocks(const array& src, int64_t src_offset, array& dst, int64_t dst_offset,
                 const Layout<2>& layout) {
  int nd = static_cast<int>(layout.shape.size());
  if (src.dtype() != dst.dtype() || nd < 2) {
    return false;
  }
  const auto& ss = layout.strides[0];
  const auto& ds = layout.strides[1];
  int64_t nl = layout.shape.back();
  int k = -1;
  for (int d = 0; d < nd - 1; ++d) {
    if (ss[d] == 1 && layout.shape[d] >= 8) {
      k = d;
    }
  }
  bool transposed = k >= 0 && ds.back() == 1 && ss.back() != 1 && nl >= 8;
  if (!transposed && nl >= kShortRow) {
    return false;
  }
  dispatch_by_size(dst.itemsize(), "copy", [&]<typename T>() {
    const T* s = src.data<T>() + src_offset;
    T* d = dst.data<T>() + dst_offset;
    if (transposed) {
      for_each_chunk(layout, k, kTile, dst.itemsize(),
                     [&](int64_t so, int64_t dof, int64_t b, int64_t e) {
                       copy_tile_rows(s + so, d + dof, b, e, nl, ss.back(), ds[k]);
                     });
    } else {
      int i = nd - 2;
      for_each_chunk(
          layout, i, 4096, dst.itemsize(), [&](int64_t so, int64_t dof, int64_t b, int64_t e) {
            copy_short_rows(s + so, d + dof, b, e, nl, ss[i], ss.back(), ds[i], ds.back());
          });
    }
  });
  return true;
}

}  // namespace

void convert_contiguous(const void* src, Dtype src_dtype, void* dst, Dtype dst_dtype, size_t n) {
  dispatch_pair(src_dtype, dst_dtype, "astype", [&]<typename From, typename To>() {
    const From* s = static_cast<const From*>(src);
    To* d = static_cast<To*>(dst);
    int64_t grain = kParallelBytes / static_cast<int64_t>(sizeof(To) + sizeof(From));
    parallel_for(static_cast<int64_t>(n), grain,
                 [&](int64_t b, int64_t e) { convert_row(s + b, 1, d + b, 1, e - b); });
  });
}

void copy_strided(const array& src, const Strides& src_strides, int64_t src_offset, array& dst,
                  const Strides& dst_strides, int64_t dst_offset, const Shape& shape) {
  if (shape_size(shape) == 0) {
    return;
  }
  auto layout = collapse_dims<2>(shape, {src_strides, dst_strides});
  if (layout.shape.size() == 1) {
    // One long run: cut it into chunks so every thread gets a share.
    int64_t ss = layout.strides[0][0];
    int64_t ds = layout.strides[1][0];
    int64_t grain = kParallelBytes / static_cast<int64_t>(dst.itemsize());
    parallel_for(layout.shape[0], grain, [&](int64_t b, int64_t e) {
      Layout<2> part{{static_cast<int32_t>(e - b)}, {Strides{ss}, Strides{ds}}};
      copy_rows(src, src_offset + b * ss, dst, dst_offset + b * ds, part);
    });
    return;
  }
  if (!copy_blocks(src, src_offset, dst, dst_offset, layout)) {
    copy_rows(src, src_offset, dst, dst_offset, layout);
  }
}

void copy_to_contiguous(const array& in, array& out) {
  bool in_place = in.is_donatable() && in.flags().row_contiguous && in.itemsize() == out.itemsize();
  if (in_place) {
    out.copy_shared_buffer(in);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
  }
  if (in_place && in.dtype() == out.dtype()) {
    return;
  }
  copy_strided(in, in.strides(), 0, out, row_major_strides(in.shape()), 0, in.shape());
}

}  // namespace mlx::core::cpu
