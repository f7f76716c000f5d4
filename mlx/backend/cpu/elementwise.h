// Loop drivers shared by the elementwise kernels: contiguous fast paths, scalar broadcasts,
// general strided iteration, output buffer donation and multithreading.
#pragma once

#include "mlx/array.h"
#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

inline bool is_dense(const array& x) { return x.flags().contiguous && x.data_size() == x.size(); }

// Gives `out` memory laid out like `like` (a dense array), taking over `donor`'s buffer
// when possible.
inline void set_dense_output_like(const array& like, array& out,
                                  std::initializer_list<const array*> donors) {
  for (const array* d : donors) {
    if (d->is_donatable() && d->itemsize() == out.itemsize() && d->strides() == like.strides() &&
        d->flags().contiguous) {
      out.copy_shared_buffer(*d);
      return;
    }
  }
  out.set_data(allocator::malloc(like.data_size() * out.itemsize()), like.data_size(),
               like.strides(), like.flags());
}

// Applies `apply_run(src, src_stride, dst, n)` over every run of elements: the whole dense
// span split across threads, or each row of a strided layout.
template <typename In, typename Out, typename RunFn>
void unary_runs(const array& in, array& out, RunFn apply_run) {
  if (is_dense(in)) {
    set_dense_output_like(in, out, {&in});
    const In* src = in.data<In>();
    Out* dst = out.data<Out>();
    int64_t n = static_cast<int64_t>(in.data_size());
    parallel_for(n, kParallelBytes / sizeof(Out),
                 [&](int64_t b, int64_t e) { apply_run(src + b, int64_t(1), dst + b, e - b); });
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  auto layout = collapse_dims<2>(in.shape(), {in.strides(), out.strides()});
  int64_t s_in = layout.strides[0].back();
  const In* src = in.data<In>();
  Out* dst = out.data<Out>();
  parallel_rows(layout, sizeof(Out), [&](const std::array<int64_t, 2>& off, int64_t len) {
    apply_run(src + off[0], s_in, dst + off[1], len);
  });
}

template <typename In, typename Out, typename Op>
void unary_loop(const array& in, array& out, Op op) {
  unary_runs<In, Out>(in, out, [op](const In* s, int64_t stride, Out* d, int64_t n) {
    if (stride == 1) {
      for (int64_t i = 0; i < n; ++i)
        d[i] = op(s[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        d[i] = op(s[i * stride]);
    }
  });
}

// Ops with a vectorized bulk kernel: contiguous runs go to `bulk`, strided rows fall back to
// the scalar functor.
template <typename T, typename Op>
void unary_loop_bulk(const array& in, array& out, void (*bulk)(const T*, T*, int64_t), Op op) {
  unary_runs<T, T>(in, out, [bulk, op](const T* s, int64_t stride, T* d, int64_t n) {
    if (stride == 1) {
      bulk(s, d, n);
    } else {
      for (int64_t i = 0; i < n; ++i)
        d[i] = op(s[i * stride]);
    }
  });
}

// Applies `apply_run(x, x_stride, y, y_stride, dst, n)` (dst[i] = op(x[i * x_stride],
// y[i * y_stride]) for i < n; a stride of 0 repeats one value) over every run of elements:
// dense spans (one operand possibly a broadcast scalar) split across threads, or each row of
// a strided layout.
template <typename In, typename Out, typename RunFn>
void binary_runs(const array& a, const array& b, array& out, RunFn apply_run) {
  const In* pa = a.data<In>();
  const In* pb = b.data<In>();
  bool a_scalar = a.data_size() == 1;
  bool b_scalar = b.data_size() == 1;
  auto dense_run = [&](const array& like, int64_t sa, int64_t sb) {
    set_dense_output_like(like, out, {&a, &b});
    Out* dst = out.data<Out>();
    int64_t n = static_cast<int64_t>(like.data_size());
    parallel_for(n, kParallelBytes / sizeof(Out), [&](int64_t s, int64_t e) {
      apply_run(pa + s * sa, sa, pb + s * sb, sb, dst + s, e - s);
    });
  };
  if (a_scalar && b_scalar) {
    out.set_data(allocator::malloc(out.nbytes()));
    Out* dst = out.data<Out>();
    if (out.size() > 0) {
      apply_run(pa, int64_t(0), pb, int64_t(0), dst, int64_t(1));
    }
    for (size_t i = 1; i < out.size(); ++i) {
      dst[i] = dst[0];
    }
  } else if (a_scalar && is_dense(b)) {
    dense_run(b, 0, 1);
  } else if (b_scalar && is_dense(a)) {
    dense_run(a, 1, 0);
  } else if (is_dense(a) && is_dense(b) && a.strides() == b.strides()) {
    dense_run(a, 1, 1);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
    auto layout = collapse_dims<3>(out.shape(), {a.strides(), b.strides(), out.strides()});
    int64_t sa = layout.strides[0].back();
    int64_t sb = layout.strides[1].back();
    Out* dst = out.data<Out>();
    parallel_rows(layout, sizeof(Out), [&](const std::array<int64_t, 3>& off, int64_t len) {
      apply_run(pa + off[0], sa, pb + off[1], sb, dst + off[2], len);
    });
  }
}

template <typename In, typename Out, typename Op>
void binary_loop(const array& a, const array& b, array& out, Op op) {
  auto run = [op](const In* x, int64_t sa, const In* y, int64_t sb, Out* d, int64_t n) {
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i)
        d[i] = op(x[i], y[i]);
    } else if (sa == 0 && sb == 1) {
      const In v = x[0];  // a local: the output may alias the other operand
      for (int64_t i = 0; i < n; ++i)
        d[i] = op(v, y[i]);
    } else if (sa == 1 && sb == 0) {
      const In v = y[0];
      for (int64_t i = 0; i < n; ++i)
        d[i] = op(x[i], v);
    } else {
      for (int64_t i = 0; i < n; ++i)
        d[i] = op(x[i * sa], y[i * sb]);
    }
  };
  binary_runs<In, Out>(a, b, out, run);
}

// Ops with a vectorized bulk kernel (elementwise_bulk.h): runs whose operands are contiguous or
// broadcast scalars go to `bulk`, other strided rows fall back to the scalar functor.
template <typename T, typename Op>
void binary_loop_bulk(const array& a, const array& b, array& out,
                      void (*bulk)(const T*, bool, const T*, bool, T*, int64_t), Op op) {
  auto run = [bulk, op](const T* x, int64_t sa, const T* y, int64_t sb, T* d, int64_t n) {
    if ((sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {
      bulk(x, sa == 0, y, sb == 0, d, n);
    } else {
      for (int64_t i = 0; i < n; ++i)
        d[i] = op(x[i * sa], y[i * sb]);
    }
  };
  binary_runs<T, T>(a, b, out, run);
}

}  // namespace mlx::core::cpu
