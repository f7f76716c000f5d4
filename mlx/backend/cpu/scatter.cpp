// CPU scatter kernels. Every index is checked before anything is written. Updates that land on
// the same element are applied in index order by one thread, so duplicates accumulate exactly
// and plain scatter keeps the last update.
#include <algorithm>
#include <cmath>

#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/common/index_utils.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/index_offsets.h"
#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/indexing.h"

namespace mlx::core {

namespace {

using namespace cpu;

template <typename T>
constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

// Arithmetic type for combining values: float for half types.
template <typename T>
using Acc = std::conditional_t<is_half_v<T>, float, T>;

template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<Acc<T>>) {
    return std::isnan(static_cast<Acc<T>>(x));
  } else {
    return false;
  }
}

struct SetOp {
  template <typename T>
  void operator()(T& d, T u) const {
    d = u;
  }
};

struct SumOp {
  template <typename T>
  void operator()(T& d, T u) const {
    if constexpr (std::is_same_v<T, bool>) {
      d = d || u;
    } else {
      d = static_cast<T>(static_cast<Acc<T>>(d) + static_cast<Acc<T>>(u));
    }
  }
};

struct ProdOp {
  template <typename T>
  void operator()(T& d, T u) const {
    if constexpr (std::is_same_v<T, bool>) {
      d = d && u;
    } else {
      d = static_cast<T>(static_cast<Acc<T>>(d) * static_cast<Acc<T>>(u));
    }
  }
};

// Max and min propagate NaN, like maximum/minimum.
struct MaxOp {
  template <typename T>
  void operator()(T& d, T u) const {
    if (static_cast<Acc<T>>(u) > static_cast<Acc<T>>(d) || is_nan(u)) {
      d = u;
    }
  }
};

struct MinOp {
  template <typename T>
  void operator()(T& d, T u) const {
    if (static_cast<Acc<T>>(u) < static_cast<Acc<T>>(d) || is_nan(u)) {
      d = u;
    }
  }
};

// Runs f.template operator()<T, Op>() for the output dtype and reduction.
template <typename F>
void dispatch_scatter(Dtype dt, ScatterReduce r, const char* name, F&& f) {
  if (r == ScatterReduce::None) {
    dispatch_by_size(size_of(dt), name, [&]<typename T>() { f.template operator()<T, SetOp>(); });
    return;
  }
  dispatch_all(dt, name, [&]<typename T>() {
    switch (r) {
      case ScatterReduce::Sum:
        return f.template operator()<T, SumOp>();
      case ScatterReduce::Prod:
        return f.template operator()<T, ProdOp>();
      case ScatterReduce::Max:
        return f.template operator()<T, MaxOp>();
      default:
        return f.template operator()<T, MinOp>();
    }
  });
}

// Applies update slices (row-major, `slice` shaped, one per offset) to out at `off`.
template <typename T, typename Op>
void scatter_slices(const std::vector<int64_t>& off, const T* upd, const Shape& slice, array& out) {
  Op op;
  T* dp = out.data<T>();
  const int64_t* offs = off.data();
  int64_t n_idx = static_cast<int64_t>(off.size());
  auto box = collapse_dims<1>(slice, {out.strides()});
  int64_t row_len = box.shape.back();
  int64_t s_out = box.strides[0].back();
  int64_t rows = num_rows(box.shape);
  int64_t slice_size = rows * row_len;
  std::vector<int64_t> row_off(rows);
  int64_t r = 0;
  for_each_row(box, 0, rows, [&](const std::array<int64_t, 1>& o) { row_off[r++] = o[0]; });

  auto apply = [&](T* d, const T* u, int64_t len) {
    if (s_out == 1) {
      for (int64_t c = 0; c < len; ++c) {
        op(d[c], u[c]);
      }
    } else {
      for (int64_t c = 0; c < len; ++c) {
        op(d[c * s_out], u[c]);
      }
    }
  };
  // Applies the slice elements [j0, j1) of every update, in index order.
  auto apply_columns = [&](int64_t j0, int64_t j1) {
    if (slice_size == 1) {
      for (int64_t p = 0; p < n_idx; ++p) {
        op(dp[offs[p]], upd[p]);
      }
      return;
    }
    for (int64_t p = 0; p < n_idx; ++p) {
      const T* u = upd + p * slice_size;
      for (int64_t j = j0; j < j1;) {
        int64_t row = j / row_len;
        int64_t c = j - row * row_len;
        int64_t len = std::min(row_len - c, j1 - j);
        apply(dp + offs[p] + row_off[row] + c * s_out, u + j, len);
        j += len;
      }
    }
  };

  int64_t work = n_idx * slice_size;
  int threads = num_threads();
  if (threads == 1 || work < kParallelBytes / static_cast<int64_t>(sizeof(T))) {
    apply_columns(0, slice_size);
  } else if (slice_size >= 64) {
    // Elements of one slice never collide, so threads split the slice.
    parallel_for(slice_size, std::max<int64_t>(1, slice_size / (4 * threads)), apply_columns);
  } else {
    // Small slices: each thread owns a range of the output and applies the updates that land
    // there.
    int64_t n_out = static_cast<int64_t>(out.size());
    parallel_for(n_out, (n_out + threads - 1) / threads, [&](int64_t lo, int64_t hi) {
      for (int64_t p = 0; p < n_idx; ++p) {
        const T* u = upd + p * slice_size;
        for (int64_t row = 0; row < rows; ++row) {
          int64_t base = offs[p] + row_off[row];
          for (int64_t c = 0; c < row_len; ++c) {
            int64_t dst = base + c * s_out;
            if (dst >= lo && dst < hi) {
              op(dp[dst], u[row * row_len + c]);
            }
          }
        }
      }
    });
  }
}

// out[o, idx[o, j, i], i] (op)= upd[o, j, i] over the [outer, axis, inner] view of row-major
// arrays; `pos` holds the wrapped indices.
template <typename T, typename Op>
void scatter_axis(const std::vector<int64_t>& pos, const T* upd, array& out, int64_t outer,
                  int64_t n, int64_t n_idx_axis, int64_t inner) {
  Op op;
  T* dp = out.data<T>();
  const int64_t* ip = pos.data();
  // Updates that collide differ only along the axis, which one thread walks in order.
  auto body = [&](int64_t o0, int64_t o1, int64_t i0, int64_t i1) {
    for (int64_t o = o0; o < o1; ++o) {
      T* d = dp + o * n * inner;
      for (int64_t j = 0; j < n_idx_axis; ++j) {
        int64_t base = (o * n_idx_axis + j) * inner;
        for (int64_t i = i0; i < i1; ++i) {
          op(d[ip[base + i] * inner + i], upd[base + i]);
        }
      }
    }
  };
  int64_t per_outer = std::max<int64_t>(1, n_idx_axis * inner * static_cast<int64_t>(sizeof(T)));
  if (outer >= num_threads()) {
    parallel_for(outer, std::max<int64_t>(1, kParallelBytes / per_outer),
                 [&](int64_t o0, int64_t o1) { body(o0, o1, 0, inner); });
  } else {
    int64_t per_inner = std::max<int64_t>(1, outer * n_idx_axis * static_cast<int64_t>(sizeof(T)));
    parallel_for(inner, std::max<int64_t>(1, kParallelBytes / per_inner),
                 [&](int64_t i0, int64_t i1) { body(0, outer, i0, i1); });
  }
}

}  // namespace

void Scatter::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& upd = inputs.back();
  const char* name = op_name();
  Shape slice = update_slice(a, upd);
  int64_t n_idx = 1;
  for (int d = 0; d < upd.ndim() - a.ndim(); ++d) {
    n_idx *= upd.shape(d);
  }
  copy_to_contiguous(a, out);
  std::vector<int64_t> off(n_idx, 0);
  for (size_t k = 0; k < axes_.size(); ++k) {
    int ax = axes_[k];
    add_index_offsets(inputs[k + 1], a.shape(ax), slice[ax], out.strides()[ax], name, ax,
                      off.data());
  }
  if (upd.size() == 0) {
    return;
  }
  dispatch_scatter(out.dtype(), reduce_, name, [&]<typename T, typename Op>() {
    scatter_slices<T, Op>(off, upd.data<T>(), slice, out);
  });
}

void ScatterAxis::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& idx = inputs[1];
  const array& upd = inputs[2];
  const char* name = op_name();
  copy_to_contiguous(a, out);
  if (idx.size() == 0) {
    return;
  }
  int64_t n = a.shape(axis_);
  std::vector<int64_t> pos(idx.size(), 0);
  add_index_offsets(idx, n, 1, 1, name, axis_, pos.data());
  int64_t outer = 1;
  int64_t inner = 1;
  for (int d = 0; d < axis_; ++d) {
    outer *= a.shape(d);
  }
  for (int d = axis_ + 1; d < a.ndim(); ++d) {
    inner *= a.shape(d);
  }
  dispatch_scatter(out.dtype(), reduce_, name, [&]<typename T, typename Op>() {
    scatter_axis<T, Op>(pos, upd.data<T>(), out, outer, n, idx.shape(axis_), inner);
  });
}

}  // namespace mlx::core
