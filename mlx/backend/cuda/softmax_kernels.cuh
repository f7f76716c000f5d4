// Softmax and LogSumExp kernels over rows of the last axis (row_tile.cuh for the layout). A row
// held in registers is read once: a group reduction finds its max, each thread exponentiates its
// elements against it, and a second reduction sums them (one exponential per element). Longer
// rows take each tile's max and sum of exponentials, merge the (max, sum) pairs tile by tile
// (online) and over the group, and read the row again for the write. 16-bit inputs compute in
// float32, float64 in double. A NaN makes the row NaN; a row of -inf gives softmax NaN and
// logsumexp -inf; +inf gives logsumexp +inf.
#pragma once

#include <cuda/std/functional>
#include <cuda/std/limits>

#include "mlx/backend/cuda/row_tile.cuh"

namespace mlx::core::cu {

// exp in the accumulation type; the 16-bit types take the fast exponential, whose error is far
// below their precision.
template <typename T, typename A>
__device__ __forceinline__ A softmax_exp(A x) {
  if constexpr (is_half_v<T>) {
    return __expf(x);
  } else {
    return ::exp(x);
  }
}

// A running max and the sum of exp(x - max) over the values seen.
template <typename A>
struct MaxSum {
  A m, s;

  __device__ static MaxSum merge(MaxSum a, MaxSum b) {
    if (::isnan(a.m) || ::isnan(b.m)) {
      return {a.m + b.m, a.s + b.s};  // NaN propagates
    }
    A m = a.m > b.m ? a.m : b.m;
    if (m == -cuda::std::numeric_limits<A>::infinity()) {
      return {m, A(0)};
    }
    return {m, a.s * ::exp(a.m - m) + b.s * ::exp(b.m - m)};
  }
};

// The largest of a thread's elements of the row (a NaN sticks); -inf where it has none.
template <typename A, typename T, int N>
__device__ __forceinline__ A tile_max(const Tile<T, N>& t, const TileMap<T, N>& m) {
  A best = -cuda::std::numeric_limits<A>::infinity();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const A v = cast_to<A>(t.v[i]);
    best = m.valid(i) && (v > best || ::isnan(v)) ? v : best;
  }
  return best;
}

// exp(element i - max), 0 past the row or where max is -inf (every element is then -inf).
template <typename A, typename T, int N>
__device__ __forceinline__ A shifted_exp(const Tile<T, N>& t, const TileMap<T, N>& m, int i,
                                         A max) {
  return m.valid(i) && max != -cuda::std::numeric_limits<A>::infinity()
             ? softmax_exp<T>(cast_to<A>(t.v[i]) - max)
             : A(0);
}

template <typename T, int N, bool kSoftmax>
__global__ void __launch_bounds__(kRowMaxThreads)
    softmax_rows(const T* in, T* out, int64_t rows, int d, int group, int chunks, bool vec) {
  using A = acc_t<T>;
  constexpr A kNegInf = -cuda::std::numeric_limits<A>::infinity();
  __shared__ MaxSum<A> shared[32];
  const int lane = threadIdx.x % group;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (row >= rows) {
    return;  // a whole warp of the last block: blocks of one row never get here
  }
  const T* x = in + row * d;
  Tile<T, N> t;
  if (chunks == 1) {
    // The row is in registers: its max, then the sum of exponentials against it, as two plain
    // reductions (merging (max, sum) pairs costs two exponentials at every step; this is 7%
    // faster at [16384, 4096] bf16 on an H100).
    TileMap<T, N> m(0, lane, group, d);
    load_tile(t, x, m, vec);
    A* slots = reinterpret_cast<A*>(shared);  // 32 pairs hold the 32 values
    const A row_max = group_reduce(
        tile_max<A>(t, m),
        [](A a, A b) { return ::isnan(a) || ::isnan(b) ? a + b : (a > b ? a : b); }, slots,
        group > 32);
    A e[N], own_sum = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      e[i] = shifted_exp(t, m, i, row_max);
      own_sum += e[i];
    }
    const A sum = group_reduce(own_sum, cuda::std::plus<A>(), slots, group > 32);
    if constexpr (kSoftmax) {
      const A inv = A(1) / sum;  // a row of -inf: 0 * inf, NaN
#pragma unroll
      for (int i = 0; i < N; ++i) {
        t.v[i] = cast_to<T>(e[i] * inv);
      }
      store_tile(out + row * d, t, m, vec);
    } else if (lane == 0) {
      out[row] = cast_to<T>(::isinf(row_max) ? row_max : row_max + ::log(sum));
    }
    return;
  }
  // Longer rows: (max, sum) pairs merged tile by tile, the row read again for the write.
  MaxSum<A> own{kNegInf, A(0)};
  for (int c = 0; c < chunks; ++c) {
    TileMap<T, N> m(c, lane, group, d);
    load_tile(t, x, m, vec);
    const A tmax = tile_max<A>(t, m);
    A tsum = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      tsum += shifted_exp(t, m, i, tmax);
    }
    own = MaxSum<A>::merge(own, {tmax, tsum});
  }
  const MaxSum<A> r = group_reduce(own, MaxSum<A>::merge, shared, group > 32);
  if constexpr (kSoftmax) {
    T* y = out + row * d;
    const A inv = A(1) / r.s;
    for (int c = 0; c < chunks; ++c) {
      TileMap<T, N> m(c, lane, group, d);
      load_tile(t, x, m, vec);
#pragma unroll
      for (int i = 0; i < N; ++i) {
        t.v[i] = cast_to<T>(softmax_exp<T>(cast_to<A>(t.v[i]) - r.m) * inv);
      }
      store_tile(y, t, m, vec);
    }
  } else if (lane == 0) {
    out[row] = cast_to<T>(::isinf(r.m) ? r.m : r.m + ::log(r.s));
  }
}

// Softmax: out has in's shape; otherwise (LogSumExp) one value per row.
template <typename T, bool kSoftmax>
void launch_softmax(const T* in, T* out, int64_t rows, int d, const RowConfig& c,
                    cudaStream_t stream) {
  if (rows == 0) {
    return;
  }
  bool vec = kSoftmax ? rows_vectorizable<T>(d, in, out) : rows_vectorizable<T>(d, in);
  dispatch_tile<kMaxTile<T>>(c.n, [&](auto n) {
    softmax_rows<T, decltype(n)::value, kSoftmax>
        <<<row_blocks(rows, c), c.block, 0, stream>>>(in, out, rows, d, c.group, c.chunks, vec);
  });
}

}  // namespace mlx::core::cu
