// RMSNorm and LayerNorm kernels, forward and backward, over rows of the last axis (row_tile.cuh
// for the layout): one read of each input row that fits in registers, one write of each output
// row, statistics in acc_t (float32 for the 16-bit types). The backward pass recomputes each row's
// statistics; weight and bias gradients are summed per thread over a strip of rows, per block over
// its warps, then over the blocks in order (rows split over a fixed grid: the sums do not depend on
// scheduling).
#pragma once

#include <atomic>
#include <cuda/std/functional>

#include "mlx/backend/cuda/row_tile.cuh"

namespace mlx::core::cu {

// A part of a row's statistics. LayerNorm: count, mean and the sum of squared deviations,
// merged by Chan et al.'s pairwise update (no cancellation when the mean is large).
template <typename A, bool kLayer>
struct RowStats {
  A n, mean, m2;

  __device__ static RowStats merge(RowStats a, RowStats b) {
    A n = a.n + b.n;
    if (n == A(0)) {
      return a;
    }
    A delta = b.mean - a.mean;
    A f = b.n / n;
    return {n, a.mean + delta * f, a.m2 + b.m2 + delta * delta * a.n * f};
  }

  template <typename T, int N>
  __device__ static RowStats of_tile(const Tile<T, N>& t, const TileMap<T, N>& m) {
    A sum = 0, n = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (m.valid(i)) {
        sum += cast_to<A>(t.v[i]);
        n += A(1);
      }
    }
    A mean = n > A(0) ? sum / n : A(0);
    A m2 = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      A dev = cast_to<A>(t.v[i]) - mean;
      m2 += m.valid(i) ? dev * dev : A(0);
    }
    return {n, mean, m2};
  }

  __device__ A center() const { return mean; }
  __device__ A inv_std(int d, float eps) const { return A(1) / ::sqrt(m2 / A(d) + A(eps)); }
};

// RMSNorm: the sum of squares (deviations about 0).
template <typename A>
struct RowStats<A, false> {
  A ss;

  __device__ static RowStats merge(RowStats a, RowStats b) { return {a.ss + b.ss}; }

  template <typename T, int N>
  __device__ static RowStats of_tile(const Tile<T, N>& t, const TileMap<T, N>&) {
    A ss = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      A v = cast_to<A>(t.v[i]);  // 0 past the row
      ss += v * v;
    }
    return {ss};
  }

  __device__ A center() const { return A(0); }
  __device__ A inv_std(int d, float eps) const { return A(1) / ::sqrt(ss / A(d) + A(eps)); }
};

// The statistics of the row a thread's group works on, every thread of the group taking part;
// `t` is left holding the thread's part of the row's last tile.
template <typename T, int N, bool kLayer>
__device__ RowStats<acc_t<T>, kLayer> row_stats(Tile<T, N>& t, const T* row, int d, int lane,
                                                int group, int chunks, bool vec,
                                                RowStats<acc_t<T>, kLayer>* shared) {
  using A = acc_t<T>;
  using Stats = RowStats<A, kLayer>;
  if constexpr (kLayer) {
    if (chunks == 1) {
      // The row is in registers: its mean, then the squared deviations about it, as two plain
      // sums. Merging (count, mean, m2) triples at every step of the reduction costs a division
      // each: this is 8% faster forward and 14% backward at [16384, 4096] bf16 (H100).
      TileMap<T, N> m(0, lane, group, d);
      load_tile(t, row, m, vec);
      A* sums = reinterpret_cast<A*>(shared);  // 32 triples hold the 32 sums
      A sum = 0;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        sum += cast_to<A>(t.v[i]);  // 0 past the row
      }
      const A mean = group_reduce(sum, cuda::std::plus<A>(), sums, group > 32) / A(d);
      A m2 = 0;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const A dev = cast_to<A>(t.v[i]) - mean;
        m2 += m.valid(i) ? dev * dev : A(0);
      }
      return {A(d), mean, group_reduce(m2, cuda::std::plus<A>(), sums, group > 32)};
    }
  }
  Stats s{};
  for (int c = 0; c < chunks; ++c) {
    TileMap<T, N> m(c, lane, group, d);
    load_tile(t, row, m, vec);
    s = Stats::merge(s, Stats::of_tile(t, m));
  }
  return group_reduce(s, Stats::merge, shared, group > 32);
}

// y = (x - mean) * inv * w + b, weight and bias null when absent (1 and 0).
template <typename T, int N, bool kLayer>
__global__ void __launch_bounds__(kRowMaxThreads)
    norm_rows(const T* x, const T* w, const T* b, T* out, int64_t rows, int d, float eps, int group,
              int chunks, bool vec) {
  using A = acc_t<T>;
  __shared__ RowStats<A, kLayer> shared[32];
  const int lane = threadIdx.x % group;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (row >= rows) {
    return;  // a whole warp of the last block: blocks of one row never get here
  }
  const T* xr = x + row * d;
  T* yr = out + row * d;
  Tile<T, N> t, tw, tb, ty;
  if (chunks == 1) {  // in flight with the row
    load_param(tw, w, TileMap<T, N>(0, lane, group, d), vec, 1.0f);
    load_param(tb, b, TileMap<T, N>(0, lane, group, d), vec, 0.0f);
  }
  auto stats = row_stats<T, N, kLayer>(t, xr, d, lane, group, chunks, vec, shared);
  const A mean = stats.center(), inv = stats.inv_std(d, eps);
  for (int c = 0; c < chunks; ++c) {
    TileMap<T, N> m(c, lane, group, d);
    if (chunks > 1) {
      load_tile(t, xr, m, vec);
      load_param(tw, w, m, vec, 1.0f);
      load_param(tb, b, m, vec, 0.0f);
    }
#pragma unroll
    for (int i = 0; i < N; ++i) {
      A v = (cast_to<A>(t.v[i]) - mean) * inv;
      ty.v[i] = cast_to<T>(v * cast_to<A>(tw.v[i]) + cast_to<A>(tb.v[i]));
    }
    store_tile(yr, ty, m, vec);
  }
}

template <typename T, bool kLayer>
void launch_norm(const T* x, const T* w, const T* b, T* out, int64_t rows, int d, float eps,
                 const RowConfig& c, cudaStream_t stream) {
  if (rows == 0) {
    return;
  }
  bool vec = rows_vectorizable<T>(d, x, w, b, out);
  dispatch_tile<kMaxTile<T>>(c.n, [&](auto n) {
    norm_rows<T, decltype(n)::value, kLayer><<<row_blocks(rows, c), c.block, 0, stream>>>(
        x, w, b, out, rows, d, eps, c.group, c.chunks, vec);
  });
}

// The backward pass holds three tiles and two column sums a thread: tiles of at most 16 (8 for
// double) keep it near 100 registers without spills (at 32 it used 200 and more); blocks of up
// to 512 threads keep rows of 8192 (4096) in registers.
template <typename T>
inline constexpr int kVjpMaxTile = sizeof(T) == 8 ? 8 : 16;
inline constexpr int kVjpMaxThreads = 512;

template <typename T>
RowConfig norm_vjp_config(int64_t d) {
  return row_config_within(d, kVjpMaxTile<T>, kVjpMaxThreads);
}

// The row sums dx needs: s1 = sum(g w), s2 = sum(g w xhat).
template <typename A>
struct GradSums {
  A s1, s2;
  __device__ static GradSums add(GradSums a, GradSums b) { return {a.s1 + b.s1, a.s2 + b.s2}; }
};

// Writes a thread's column sums `acc` (one row in registers: chunks == 1) into the block's row
// `part` of a [gridDim, d] scratch. Warps per row add theirs in warp order through `shared`
// (32 * N values).
template <typename T, int N, typename A>
__device__ void write_part(A* part, const A (&acc)[N], const TileMap<T, N>& m, int groups,
                           A* shared) {
  if (part == nullptr) {
    return;
  }
  if (groups == 1) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (m.valid(i)) {
        part[m.col(i)] = acc[i];
      }
    }
    return;
  }
  const int q = threadIdx.x / 32;
  for (int w = 0; w < groups; ++w) {
    if (q == w) {
#pragma unroll
      for (int i = 0; i < N; ++i) {
        if (m.valid(i)) {
          A prev = w == 0 ? A(0) : shared[m.col(i)];
          shared[m.col(i)] = prev + acc[i];
        }
      }
    }
    __syncthreads();
  }
  for (int c = threadIdx.x; c < m.d; c += blockDim.x) {
    part[c] = shared[c];
  }
  __syncthreads();  // before `shared` is filled again
}

// Backward over the strip of rows [blockIdx.x * rows_per_block, + rows_per_block), the block's
// groups taking every groups-th row. dw_part / db_part ([gridDim, d], null when not wanted) get
// the strip's sums of g * xhat and of g.
template <typename T, int N, bool kLayer>
__global__ void __launch_bounds__(kVjpMaxThreads)
    norm_vjp_rows(const T* x, const T* w, const T* g, T* dx, acc_t<T>* dw_part, acc_t<T>* db_part,
                  int64_t rows, int64_t rows_per_block, int d, float eps, int group, int chunks,
                  bool vec) {
  using A = acc_t<T>;
  __shared__ RowStats<A, kLayer> stats_shared[32];
  __shared__ GradSums<A> sums_shared[32];
  __shared__ A part_shared[32 * N];
  const int groups = blockDim.x / group, lane = threadIdx.x % group;
  const bool whole_block = group > 32;
  const int64_t r0 = int64_t(blockIdx.x) * rows_per_block;
  const int64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
  if (dw_part != nullptr) {
    dw_part += int64_t(blockIdx.x) * d;
  }
  if (db_part != nullptr) {
    db_part += int64_t(blockIdx.x) * d;
  }
  Tile<T, N> tx, tg, tw, tdx;
  A dw_acc[N] = {}, db_acc[N] = {};
  if (chunks == 1) {
    load_param(tw, w, TileMap<T, N>(0, lane, group, d), vec, 1.0f);  // same columns every row
  }
  for (int64_t r = r0 + threadIdx.x / group; r < r1; r += groups) {
    const T* xr = x + r * d;
    const T* gr = g + r * d;
    if (chunks == 1) {
      load_tile(tg, gr, TileMap<T, N>(0, lane, group, d), vec);  // in flight with x
    }
    // Tile c of x, g and w; a row of one tile stays in registers from its first load.
    auto load_tiles = [&](int c) {
      TileMap<T, N> m(c, lane, group, d);
      if (chunks > 1) {
        load_tile(tx, xr, m, vec);
        load_tile(tg, gr, m, vec);
        load_param(tw, w, m, vec, 1.0f);
      }
      return m;
    };
    auto stats = row_stats<T, N, kLayer>(tx, xr, d, lane, group, chunks, vec, stats_shared);
    const A mean = stats.center(), inv = stats.inv_std(d, eps);
    GradSums<A> sums{0, 0};
    for (int c = 0; c < chunks; ++c) {
      const TileMap<T, N> m = load_tiles(c);
#pragma unroll
      for (int i = 0; i < N; ++i) {
        A gw = cast_to<A>(tg.v[i]) * cast_to<A>(tw.v[i]);  // 0 past the row
        sums.s1 += gw;
        sums.s2 += gw * (cast_to<A>(tx.v[i]) - mean) * inv;
      }
    }
    sums = group_reduce(sums, GradSums<A>::add, sums_shared, whole_block);
    const A s1 = sums.s1 / A(d), s2 = sums.s2 / A(d);
    for (int c = 0; c < chunks; ++c) {
      const TileMap<T, N> m = load_tiles(c);
#pragma unroll
      for (int i = 0; i < N; ++i) {
        A gi = cast_to<A>(tg.v[i]);
        A xhat = (cast_to<A>(tx.v[i]) - mean) * inv;
        A gw = gi * cast_to<A>(tw.v[i]);
        tdx.v[i] = cast_to<T>(kLayer ? inv * (gw - s1 - xhat * s2) : inv * (gw - xhat * s2));
        if (chunks == 1) {
          dw_acc[i] += gi * xhat;
          db_acc[i] += gi;
        } else if (m.valid(i)) {
          // A block per row (groups == 1): each column's sums are this thread's alone.
          if (dw_part != nullptr) {
            dw_part[m.col(i)] = (r == r0 ? A(0) : dw_part[m.col(i)]) + gi * xhat;
          }
          if (db_part != nullptr) {
            db_part[m.col(i)] = (r == r0 ? A(0) : db_part[m.col(i)]) + gi;
          }
        }
      }
      store_tile(dx + r * d, tdx, m, vec);
    }
  }
  if (chunks == 1) {
    TileMap<T, N> m(0, lane, group, d);
    write_part(dw_part, dw_acc, m, groups, part_shared);
    write_part(db_part, db_acc, m, groups, part_shared);
  }
}

// out0 / out1 (blockIdx.y 0 / 1) = the sums over n_parts rows of parts0 / parts1 ([n_parts, d]),
// each column by 32 threads over every 32nd part, then in thread order.
template <typename T>
__global__ void __launch_bounds__(1024)
    sum_parts(const acc_t<T>* parts0, T* out0, const acc_t<T>* parts1, T* out1, int64_t n_parts,
              int d) {
  using A = acc_t<T>;
  __shared__ A partial[32][33];
  const acc_t<T>* parts = blockIdx.y == 0 ? parts0 : parts1;
  T* out = blockIdx.y == 0 ? out0 : out1;
  const int col = blockIdx.x * 32 + threadIdx.x;
  A s = 0;
  if (col < d) {
#pragma unroll 4  // loads in flight: a thread sums up to (blocks per SM x SMs) / 32 parts
    for (int64_t p = threadIdx.y; p < n_parts; p += 32) {
      s += parts[p * d + col];
    }
  }
  partial[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < d) {
    for (int y = 1; y < 32; ++y) {
      s += partial[y][threadIdx.x];
    }
    out[col] = cast_to<T>(s);
  }
}

// How the backward pass splits its rows: `parts` blocks (enough to fill every SM, at most one
// per group of rows) of `rows_per_block` rows each, and its float32 (float64) scratch.
struct NormVjpPlan {
  RowConfig config;
  int64_t rows, parts, rows_per_block;
  int d;
  size_t scratch_bytes(int n_sums, size_t acc_size) const { return acc_size * parts * d * n_sums; }
};

template <typename T, bool kLayer>
NormVjpPlan plan_norm_vjp(int64_t rows, int d, const RowConfig& c, int num_sms) {
  int per_sm = 1;
  dispatch_tile<kVjpMaxTile<T>>(c.n, [&](auto n) {
    // A driver query, asked once per kernel and block size (0: not asked yet).
    static std::atomic<int> known[kVjpMaxThreads / 32 + 1];
    std::atomic<int>& k = known[c.block / 32];
    per_sm = k.load(std::memory_order_relaxed);
    if (per_sm == 0) {
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &per_sm, norm_vjp_rows<T, decltype(n)::value, kLayer>, c.block, 0);
      per_sm = std::max(per_sm, 1);
      k.store(per_sm, std::memory_order_relaxed);
    }
  });
  int64_t groups = c.block / c.group;
  int64_t parts = std::min<int64_t>(int64_t(num_sms) * per_sm,
                                    std::max<int64_t>((rows + groups - 1) / groups, 1));
  int64_t rows_per_block = std::max<int64_t>((rows + parts - 1) / parts, 1);
  // No block without rows: each writes its row of the scratch.
  parts = rows == 0 ? 0 : (rows + rows_per_block - 1) / rows_per_block;
  return {c, rows, parts, rows_per_block, d};
}

// dx, and dw / db (null when not wanted) through `scratch` (plan.scratch_bytes).
template <typename T, bool kLayer>
void launch_norm_vjp(const NormVjpPlan& p, const T* x, const T* w, const T* g, T* dx, T* dw, T* db,
                     acc_t<T>* scratch, float eps, cudaStream_t stream) {
  using A = acc_t<T>;
  A* dw_part = dw != nullptr ? scratch : nullptr;
  A* db_part = db != nullptr ? scratch + (dw != nullptr ? p.parts * p.d : 0) : nullptr;
  if (p.parts > 0) {
    bool vec = rows_vectorizable<T>(p.d, x, w, g, dx);
    dispatch_tile<kVjpMaxTile<T>>(p.config.n, [&](auto n) {
      norm_vjp_rows<T, decltype(n)::value, kLayer>
          <<<static_cast<unsigned>(p.parts), p.config.block, 0, stream>>>(
              x, w, g, dx, dw_part, db_part, p.rows, p.rows_per_block, p.d, eps, p.config.group,
              p.config.chunks, vec);
    });
  }
  int n_sums = (dw != nullptr) + (db != nullptr);
  if (n_sums > 0) {
    const A* first = dw != nullptr ? dw_part : db_part;
    T* first_out = dw != nullptr ? dw : db;
    dim3 grid(static_cast<unsigned>((p.d + 31) / 32), n_sums);
    sum_parts<T><<<grid, dim3(32, 32), 0, stream>>>(first, first_out, db_part, db, p.parts, p.d);
  }
}

}  // namespace mlx::core::cu
