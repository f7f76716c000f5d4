// What the row kernels of the last axis (norm_kernels.cuh, softmax_kernels.cuh) share: a row
// held in registers by a group of threads (a warp, or the whole block), its 16-byte loads and
// stores, the group's reduction, and the launch shape chosen from the row length. Standalone
// with nvcc (no library headers beyond device_types.cuh), so benchmarks/cuda/bench_norms.cu
// can include the kernels.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "mlx/backend/cuda/device_types.cuh"

namespace mlx::core::cu {

// Elements of T in one 16-byte access.
template <typename T>
inline constexpr int kVec = 16 / static_cast<int>(sizeof(T));

// The most threads a forward row kernel is launched with (its __launch_bounds__).
inline constexpr int kRowMaxThreads = 256;

// How a row kernel runs: a group of `group` threads works on a row (32: a warp per row and
// block / 32 rows per block; equal to `block`: a block per row), each thread holding `n`
// elements of a tile of group * n. A row is `chunks` tiles: with one, it stays in registers
// from its load to its write; longer rows are read again for each pass.
struct RowConfig {
  int n;
  int group;
  int block;
  int chunks;
};

// Rows up to 32 * max_n take a warp each; longer ones a block each, held in registers while
// max_threads threads of max_n elements hold them, else looping over tiles of that size. The
// largest tile wins on the H200 (rows of 4096 in bf16: softmax 2382 GB/s with 32-element tiles
// against 1703 with 16, LayerNorm 2159 against 1814; the VJP 1.9x faster with 16 than 8): fewer
// threads a row means a cheaper block reduction and more rows in flight per SM.
inline RowConfig row_config_within(int64_t d, int max_n, int max_threads) {
  if (d <= 32 * max_n) {
    return {d <= 32 * 8 ? 8 : d <= 32 * 16 ? 16 : 32, 32, 128, 1};
  }
  if (int64_t threads = (d + max_n - 1) / max_n; threads <= max_threads) {
    int block = static_cast<int>((threads + 31) / 32 * 32);
    return {max_n, block, block, 1};
  }
  int64_t tile = int64_t(max_n) * max_threads;
  return {max_n, max_threads, max_threads, static_cast<int>((d + tile - 1) / tile)};
}

// The largest per-thread tile of a forward kernel: 32 elements, 16 for double (32 doubles took
// over 200 registers).
template <typename T>
inline constexpr int kMaxTile = sizeof(T) == 8 ? 16 : 32;

// The launch shape of the forward kernels for rows of d elements of T.
template <typename T>
RowConfig row_config(int64_t d) {
  return row_config_within(d, kMaxTile<T>, kRowMaxThreads);
}

// Blocks a forward row kernel needs for `rows` rows.
inline unsigned row_blocks(int64_t rows, const RowConfig& c) {
  int64_t per_block = c.block / c.group;
  return static_cast<unsigned>((rows + per_block - 1) / per_block);
}

// Calls f(std::integral_constant<int, N>) for the per-thread tile sizes kernels are built for:
// 8, 16 and 32, those above kMaxN left out.
template <int kMaxN = 32, typename F>
void dispatch_tile(int n, F&& f) {
  if (n == 8) {
    return f(std::integral_constant<int, 8>{});
  }
  if constexpr (kMaxN >= 16) {
    if (n == 16) {
      return f(std::integral_constant<int, 16>{});
    }
  }
  if constexpr (kMaxN >= 32) {
    if (n == 32) {
      return f(std::integral_constant<int, 32>{});
    }
  }
  throw std::invalid_argument("[row kernels] Unsupported tile size.");
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// 16-byte accesses are safe when every row starts aligned: pointers aligned and the row length
// a multiple of the vector width.
template <typename T, typename... Ptrs>
bool rows_vectorizable(int64_t d, const Ptrs*... ptrs) {
  return d % kVec<T> == 0 && (aligned16(ptrs) && ...);
}

// One thread's N elements of a tile, in the row's type.
template <typename T, int N>
struct alignas(16) Tile {
  static_assert(N % kVec<T> == 0, "a tile holds whole vectors");
  T v[N];
};

// Where a thread's elements of tile `chunk` lie in a row of d: element i is in vector i / V,
// which starts at column first + (i / V) * stride; neighbouring threads take neighbouring
// vectors, so a group's loads are coalesced.
template <typename T, int N>
struct TileMap {
  static constexpr int kV = kVec<T>;
  int first, stride, d;
  __device__ TileMap(int chunk, int lane, int group, int d)
      : first(chunk * group * N + lane * kV), stride(group * kV), d(d) {}
  __device__ int col(int i) const { return first + (i / kV) * stride + i % kV; }
  __device__ bool valid(int i) const { return col(i) < d; }
};

// Loads a thread's part of a tile; elements past the row read as 0. `vec`: rows_vectorizable.
template <typename T, int N>
__device__ __forceinline__ void load_tile(Tile<T, N>& t, const T* row, const TileMap<T, N>& m,
                                          bool vec) {
  constexpr int V = kVec<T>;
#pragma unroll
  for (int k = 0; k < N / V; ++k) {
    const int c = m.col(k * V);
    if (vec) {
      *reinterpret_cast<uint4*>(&t.v[k * V]) =
          c < m.d ? *reinterpret_cast<const uint4*>(row + c) : make_uint4(0, 0, 0, 0);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        t.v[k * V + j] = c + j < m.d ? row[c + j] : cast_to<T>(0.0f);
      }
    }
  }
}

// A weight or bias tile: `absent` everywhere when the parameter is not given (p is null).
template <typename T, int N>
__device__ __forceinline__ void load_param(Tile<T, N>& t, const T* p, const TileMap<T, N>& m,
                                           bool vec, float absent) {
  if (p != nullptr) {
    load_tile(t, p, m, vec);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      t.v[i] = cast_to<T>(absent);
    }
  }
}

// Stores the elements of a thread's part of a tile that lie in the row.
template <typename T, int N>
__device__ __forceinline__ void store_tile(T* row, const Tile<T, N>& t, const TileMap<T, N>& m,
                                           bool vec) {
  constexpr int V = kVec<T>;
#pragma unroll
  for (int k = 0; k < N / V; ++k) {
    const int c = m.col(k * V);
    if (vec) {
      if (c < m.d) {
        *reinterpret_cast<uint4*>(row + c) = *reinterpret_cast<const uint4*>(&t.v[k * V]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (c + j < m.d) {
          row[c + j] = t.v[k * V + j];
        }
      }
    }
  }
}

// A warp shuffle of any value made of 32-bit words (a float, a double, a struct of them).
template <typename S>
__device__ __forceinline__ S shfl_xor_words(S v, int mask) {
  static_assert(sizeof(S) % 4 == 0, "shuffled values are whole 32-bit words");
  int w[sizeof(S) / 4];
  memcpy(w, &v, sizeof(S));
#pragma unroll
  for (int i = 0; i < int(sizeof(S) / 4); ++i) {
    w[i] = __shfl_xor_sync(0xffffffff, w[i], mask);
  }
  memcpy(&v, w, sizeof(S));
  return v;
}

// Combines one value per thread over its group (a warp, or with `whole_block` the block, whose
// size is a multiple of 32): a butterfly over the warp, then one step through `shared` (32
// values). Each step combines the lower lane's value with the higher's, whichever lane computes
// it, so every thread ends with the same bits even for an order-sensitive combine. Calls may
// follow each other directly.
template <typename S, typename Combine>
__device__ __forceinline__ S group_reduce(S v, Combine combine, S* shared, bool whole_block) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mask = 1; mask < 32; mask *= 2) {
    S other = shfl_xor_words(v, mask);
    bool low = (lane & mask) == 0;
    v = combine(low ? v : other, low ? other : v);
  }
  if (!whole_block) {
    return v;
  }
  const int warp = threadIdx.x / 32;
  __syncthreads();  // the previous call's readers are done with `shared`
  if (lane == 0) {
    shared[warp] = v;
  }
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < int(blockDim.x / 32); ++w) {
    v = combine(v, shared[w]);
  }
  return v;
}

}  // namespace mlx::core::cu
