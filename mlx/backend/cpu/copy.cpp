#include "mlx/backend/cpu/copy.h"

#include <cstring>

#include "mlx/backend/cpu/dispatch.h"
#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

namespace {

template <typename From, typename To>
void convert_row(const From* src, int64_t src_stride, To* dst, int64_t dst_stride, int64_t n) {
  if (src_stride == 1 && dst_stride == 1) {
    if constexpr (std::is_same_v<From, To>) {
      std::memcpy(dst, src, n * sizeof(To));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = cast_value<To>(src[i]);
      }
    }
  } else if (src_stride == 0) {
    To v = cast_value<To>(src[0]);
    for (int64_t i = 0; i < n; ++i) {
      dst[i * dst_stride] = v;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      dst[i * dst_stride] = cast_value<To>(src[i * src_stride]);
    }
  }
}

// Calls f.template operator()<From, To>() for the element types of two dtypes. Copies between
// equal dtypes move bytes, so they go through same-size unsigned types.
template <typename F>
void dispatch_pair(Dtype from, Dtype to, const char* op, F&& f) {
  if (from == to) {
    dispatch_by_size(from.size, op, [&]<typename T>() { f.template operator()<T, T>(); });
    return;
  }
  dispatch_all(from, op, [&]<typename From>() {
    dispatch_all(to, op, [&]<typename To>() { f.template operator()<From, To>(); });
  });
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
