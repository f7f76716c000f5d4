// CPU gather kernels: index arrays become element offsets (checked) in one pass, then slices are
// copied row by row.
#include <algorithm>

#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/common/index_utils.h"
#include "mlx/backend/cpu/index_offsets.h"
#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/indexing.h"

namespace mlx::core {

namespace cpu {

void add_index_offsets(const array& indices, int64_t n, int64_t slice, int64_t stride,
                       const char* op, int axis, int64_t* off) {
  if (indices.size() == 0) {
    return;
  }
  // `off` is row-major, so merging dimensions for the indices alone keeps rows aligned with it.
  auto layout = collapse_dims<1>(indices.shape(), {indices.strides()});
  int64_t rows = num_rows(layout.shape);
  int64_t len = layout.shape.back();
  int64_t s = layout.strides[0].back();
  uint64_t limit = index_limit(n, slice);
  dispatch_int(indices.dtype(), op, [&]<typename I>() {
    const I* base = indices.data<I>();
    int64_t grain = std::max<int64_t>(1, kParallelBytes / (len * sizeof(int64_t)));
    parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
      int64_t* dst = off + r0 * len;
      for_each_row(layout, r0, r1, [&](const std::array<int64_t, 1>& o) {
        const I* ix = base + o[0];
        bool bad = false;
        for (int64_t i = 0; i < len; ++i) {
          int64_t v = wrap_index(ix[i * s], n);
          bad |= !index_fits(v, limit);
          dst[i] += v * stride;
        }
        if (bad) {
          report_bad_index(ix, s, len, n, slice, op, axis);
        }
        dst += len;
      });
    });
  });
}

}  // namespace cpu

namespace {

using namespace cpu;

template <typename T>
void gather_slices(const array& src, const std::vector<int64_t>& off, const Shape& slice_sizes,
                   array& out) {
  const T* sp = src.data<T>();
  T* dp = out.data<T>();
  const int64_t* op = off.data();
  int64_t n_idx = static_cast<int64_t>(off.size());
  auto box = collapse_dims<1>(slice_sizes, {src.strides()});
  int64_t row_len = box.shape.back();
  int64_t s_in = box.strides[0].back();
  int64_t rows = num_rows(box.shape);
  if (rows == 1 && row_len == 1) {
    parallel_for(n_idx, kParallelBytes / sizeof(T), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        dp[p] = sp[op[p]];
      }
    });
    return;
  }
  // Offsets of the slice's rows relative to the slice start.
  std::vector<int64_t> row_off(rows);
  int64_t r = 0;
  for_each_row(box, 0, rows, [&](const std::array<int64_t, 1>& o) { row_off[r++] = o[0]; });
  int64_t grain = std::max<int64_t>(1, kParallelBytes / (row_len * sizeof(T)));
  parallel_for(n_idx * rows, grain, [&](int64_t q0, int64_t q1) {
    int64_t p = q0 / rows;
    int64_t r = q0 % rows;
    T* d = dp + q0 * row_len;
    for (int64_t q = q0; q < q1; ++q, d += row_len) {
      const T* s = sp + op[p] + row_off[r];
      if (s_in == 1) {
        std::copy_n(s, row_len, d);
      } else {
        for (int64_t i = 0; i < row_len; ++i) {
          d[i] = s[i * s_in];
        }
      }
      if (++r == rows) {
        r = 0;
        ++p;
      }
    }
  });
}

// out[q] = src[q's offset in src + wrapped(idx[q]) * a_stride] over a layout of
// {index, source, output} strides, where the source strides leave out the indexed axis.
template <typename I, typename T>
void gather_elements(const array& idx, const T* sb, const Layout<3>& layout, int64_t n,
                     int64_t a_stride, array& out, const char* op, int axis) {
  int64_t rows = num_rows(layout.shape);
  int64_t len = layout.shape.back();
  int64_t si = layout.strides[0].back();
  int64_t ss = layout.strides[1].back();
  int64_t so = layout.strides[2].back();
  const I* ib = idx.data<I>();
  T* db = out.data<T>();
  uint64_t limit = index_limit(n, 1);
  parallel_for(rows, std::max<int64_t>(1, kParallelBytes / (len * sizeof(T))),
               [&](int64_t r0, int64_t r1) {
                 for_each_row(layout, r0, r1, [&](const std::array<int64_t, 3>& o) {
                   const I* ix = ib + o[0];
                   const T* s = sb + o[1];
                   T* d = db + o[2];
                   bool bad = false;
                   for (int64_t i = 0; i < len; ++i) {
                     int64_t v = wrap_index(ix[i * si], n);
                     bool ok = index_fits(v, limit);
                     bad |= !ok;
                     // Bad indices read element 0 until the row is reported.
                     d[i * so] = s[i * ss + (ok ? v : 0) * a_stride];
                   }
                   if (bad) {
                     report_bad_index(ix, si, len, n, 1, op, axis);
                   }
                 });
               });
}

}  // namespace

void Gather::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  out.set_data(allocator::malloc(out.nbytes()));
  int64_t n_idx = inputs.size() > 1 ? static_cast<int64_t>(inputs[1].size()) : 1;
  if (n_idx == 0) {
    return;
  }
  if (axes_.size() == 1 && shape_size(slice_sizes_) == 1) {
    // One element per index (take on a flat array, for one): read it directly.
    const array& idx = inputs[1];
    int ax = axes_[0];
    auto layout = collapse_dims<3>(
        idx.shape(), {idx.strides(), Strides(idx.ndim(), 0), row_major_strides(idx.shape())});
    dispatch_int(idx.dtype(), op_, [&]<typename I>() {
      dispatch_by_size(out.itemsize(), op_, [&]<typename T>() {
        gather_elements<I, T>(idx, src.data<T>(), layout, src.shape(ax), src.strides()[ax], out,
                              op_, ax);
      });
    });
    return;
  }
  std::vector<int64_t> off(n_idx, 0);
  for (size_t k = 0; k < axes_.size(); ++k) {
    int ax = axes_[k];
    add_index_offsets(inputs[k + 1], src.shape(ax), slice_sizes_[ax], src.strides()[ax], op_, ax,
                      off.data());
  }
  if (out.size() == 0) {
    return;
  }
  dispatch_by_size(out.itemsize(), op_,
                   [&]<typename T>() { gather_slices<T>(src, off, slice_sizes_, out); });
}

void GatherAxis::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  const array& idx = inputs[1];
  const char* op = "take_along_axis";
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  dispatch_int(idx.dtype(), op, [&]<typename I>() {
    if (src.shape(axis_) == 0) {
      // Nothing to read, so every index is out of bounds.
      report_bad_index(idx.data<I>(), 0, 1, 0, 1, op, axis_);
    }
    Strides src_strides = src.strides();
    src_strides[axis_] = 0;  // the index supplies the position along `axis`
    auto layout = collapse_dims<3>(out.shape(), {idx.strides(), src_strides, out.strides()});
    dispatch_by_size(out.itemsize(), op, [&]<typename T>() {
      gather_elements<I, T>(idx, src.data<T>(), layout, src.shape(axis_), src.strides()[axis_], out,
                            op, axis_);
    });
  });
}

}  // namespace mlx::core
