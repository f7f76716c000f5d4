// The fused backward pass of scaled_dot_product_attention, for the inputs the forward kernel
// takes (flash_forward.cuh). As in FlashAttention-2, a block owns 64 keys of one key/value
// head (16 per warp) and walks the query tiles of every query head in its group, the next Q
// and dO tiles copying in while the current ones are used. Per tile each warp forms, in
// registers and transposed (its keys as rows):
//   P^T = 2^(scale_log2 K Q^T - lse)   (from the forward's row log-sum-exp, no softmax pass),
//   dP^T = V dO^T,  dS^T = P^T (dP^T - delta)   (delta = rowsum(dO * O)),
//   dV += P^T dO,  dK += dS^T Q   (accumulated in registers over all tiles),
// and the block then adds dQ += dS K, which needs every warp's keys, through a shared dS^T
// tile and float atomics into a float32 buffer. The [T_q, T_kv] matrices are never stored.
#pragma once

#include "mlx/backend/cuda/flash_forward.cuh"

namespace mlx::core::cu::flash {

constexpr int kScoreStride = kRows + kPad;  // the shared dS^T tile's row stride

template <int D>
constexpr size_t backward_shared_bytes() {
  return sizeof(uint16_t) * (2 * kKeys + 4 * kRows) * kStride<D>  // K, V, then Q and dO twice
         + sizeof(uint16_t) * kKeys * kScoreStride                // dS^T
         + sizeof(float) * 4 * kRows;                             // lse and delta, twice
}

// dq is float32 and zeroed by the caller; dk and dv are written whole. lse and delta are
// dense, a float per query row.
template <typename T, int D>
__global__ void __launch_bounds__(kBlockThreads)
    flash_backward(Heads<const T> q, Heads<const T> k, Heads<const T> v, Heads<const T> d_out,
                   const float* lse, const float* delta, Heads<float> dq, Heads<T> dk, Heads<T> dv,
                   AttentionShape shape, float scale, float scale_log2) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int S = kStride<D>;
  T* s_k = reinterpret_cast<T*>(smem);
  T* s_v = s_k + kKeys * S;
  T* s_q = s_v + kKeys * S;       // two tiles
  T* s_do = s_q + 2 * kRows * S;  // two tiles
  T* s_ds = s_do + 2 * kRows * S;
  float* s_lse = reinterpret_cast<float*>(s_ds + kKeys * kScoreStride);  // two rows
  float* s_delta = s_lse + 2 * kRows;                                    // two rows

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int t_q = shape.t_q, t_kv = shape.t_kv, group = shape.group;
  const int kv_heads = shape.heads / group;
  const int64_t b = blockIdx.x / kv_heads, kv_h = blockIdx.x % kv_heads;
  const int64_t first_h = kv_h * group;  // the group's first query head
  const int k0 = blockIdx.y * kKeys;
  const int shift = t_kv - t_q;  // query row i sees keys up to i + shift (causal)
  // The first query tile that sees a key of this block.
  const int q_first = shape.causal ? max(0, k0 - shift) / kRows * kRows : 0;
  const int tiles_per_head = q_first < t_q ? (t_q - q_first + kRows - 1) / kRows : 0;
  const int tiles = group * tiles_per_head;

  // Query tile i: head first_h + i / tiles_per_head, rows from q0_of(i).
  auto q0_of = [&](int i) { return q_first + (i % tiles_per_head) * kRows; };
  // The first query tile at or after i that the mask does not hide from all of the block's keys.
  auto next_live = [&](int i) {
    while (i < tiles &&
           !shape.mask.tile_live(b, first_h + i / tiles_per_head, q0_of(i) / kRows, k0 / kKeys)) {
      ++i;
    }
    return i;
  };
  // Query tile i into buffer `buf`.
  auto load_query_tile = [&](int i, int buf) {
    const int64_t h = first_h + i / tiles_per_head;
    const int q0 = q0_of(i);
    load_tile_async<T, D>(s_q + buf * kRows * S, q.at(b, h, q0), q.row, kRows, t_q - q0);
    load_tile_async<T, D>(s_do + buf * kRows * S, d_out.at(b, h, q0), d_out.row, kRows, t_q - q0);
    const int r = threadIdx.x % kRows;
    const bool ok = q0 + r < t_q;
    const float* src = threadIdx.x < kRows ? lse : delta;
    float* dst = threadIdx.x < kRows ? s_lse : s_delta;
    copy_async4(dst + buf * kRows + r, ok ? src + (b * shape.heads + h) * t_q + q0 + r : src, ok);
  };

  load_tile_async<T, D>(s_k, k.at(b, kv_h, k0), k.row, kKeys, t_kv - k0);
  load_tile_async<T, D>(s_v, v.at(b, kv_h, k0), v.row, kKeys, t_kv - k0);
  int i = next_live(0);
  if (i < tiles) {
    load_query_tile(i, 0);
  }
  commit_async();

  const int key0 = k0 + warp * 16 + lane / 4;  // this thread's keys: key0 and key0 + 8
  const int col = 2 * (lane % 4);
  const T* w_k = s_k + warp * 16 * S;
  const T* w_v = s_v + warp * 16 * S;
  float dk_acc[D / 8][4] = {};
  float dv_acc[D / 8][4] = {};

  for (int step = 0; i < tiles; ++step) {
    wait_async();
    __syncthreads();  // tile i is in, and every warp is done with the step before and dS^T
    const int next = next_live(i + 1);
    if (next < tiles) {
      load_query_tile(next, (step + 1) % 2);
    }
    commit_async();
    const int64_t head = first_h + i / tiles_per_head;
    const int q0 = q0_of(i);
    const T* qt = s_q + (step % 2) * kRows * S;
    const T* dot = s_do + (step % 2) * kRows * S;
    const float* lt = s_lse + (step % 2) * kRows;
    const float* dt = s_delta + (step % 2) * kRows;

    // S^T = K Q^T and dP^T = V dO^T for the warp's keys.
    float p[kRows / 8][4] = {}, ds[kRows / 8][4] = {};
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t ak[4], av[4];
      load_a<S>(ak, w_k, kk * 16, lane);
      load_a<S>(av, w_v, kk * 16, lane);
      mma_row_of_rows<kRows, S>(p, ak, qt, kk * 16, lane);
      mma_row_of_rows<kRows, S>(ds, av, dot, kk * 16, lane);
    }
    // P^T and dS^T. Rows past t_q, keys a causal row does not see and keys a mask array
    // hides get zeros, as do rows that see no key (lse -inf).
    const bool masked =
        shape.mask.present() || q0 + kRows > t_q || (shape.causal && k0 + kKeys - 1 > q0 + shift);
    for (int n = 0; n < kRows / 8; ++n) {
      for (int e = 0; e < 4; ++e) {
        p[n][e] *= scale_log2;
      }
    }
    if (shape.mask.present()) {
      // This thread's keys' offsets (clamped to the last key: the keys past it get no
      // gradient), then a row per score.
      const int64_t mask_keys[2] = {shape.mask.offset(b, head, 0, min(key0, t_kv - 1)),
                                    shape.mask.offset(b, head, 0, min(key0 + 8, t_kv - 1))};
      shape.mask.add_to<T>(p, [&](int n, int e) {
        return mask_keys[e / 2] + min(q0 + n * 8 + col + (e & 1), t_q - 1) * shape.mask.row;
      });
    }
    for (int n = 0; n < kRows / 8; ++n) {
      for (int e = 0; e < 4; ++e) {
        const int c = n * 8 + col + (e & 1);  // the query, within the tile
        float x;
        if (!masked) {
          x = exp2f(p[n][e] - lt[c]);
        } else {
          const int row = q0 + c, key = key0 + (e / 2) * 8;
          const bool hidden = row >= t_q || key >= t_kv || (shape.causal && key > row + shift) ||
                              lt[c] == -INFINITY;
          x = hidden ? 0.f : exp2f(p[n][e] - lt[c]);
        }
        p[n][e] = x;
        ds[n][e] = x * (ds[n][e] - dt[c]);
      }
    }
    // dV += P^T dO and dK += dS^T Q, the A operands straight from registers.
    for (int kk = 0; kk < kRows / 16; ++kk) {
      uint32_t a[4];
      accumulators_as_a<T>(a, p, kk);
      mma_row<D, S>(dv_acc, a, dot, kk * 16, lane);
      accumulators_as_a<T>(a, ds, kk);
      mma_row<D, S>(dk_acc, a, qt, kk * 16, lane);
    }
    // dS^T into shared memory for dQ.
    for (int n = 0; n < kRows / 8; ++n) {
      for (int h = 0; h < 2; ++h) {
        *reinterpret_cast<uint32_t*>(s_ds + (warp * 16 + lane / 4 + 8 * h) * kScoreStride + n * 8 +
                                     col) = pack<T>(ds[n][2 * h], ds[n][2 * h + 1]);
      }
    }
    __syncthreads();

    // dQ of the warp's 16 query rows += dS K over the block's 64 keys.
    float dq_acc[D / 8][4] = {};
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      uint32_t a[4];
      load_a_transposed<kScoreStride>(a, s_ds, warp * 16, kk * 16, lane);
      mma_row<D, S>(dq_acc, a, s_k, kk * 16, lane);
    }
    for (int h = 0; h < 2; ++h) {
      const int row = q0 + warp * 16 + lane / 4 + 8 * h;
      if (row >= t_q) {
        continue;
      }
      float* dst = dq.at(b, head, row) + col;
      for (int n = 0; n < D / 8; ++n) {
        const float x = scale * dq_acc[n][2 * h], y = scale * dq_acc[n][2 * h + 1];
#if __CUDA_ARCH__ >= 900
        atomicAdd(reinterpret_cast<float2*>(dst + n * 8), make_float2(x, y));
#else
        atomicAdd(dst + n * 8, x);
        atomicAdd(dst + n * 8 + 1, y);
#endif
      }
    }
    i = next;
  }
  wait_async();

  for (int h = 0; h < 2; ++h) {
    const int key = key0 + 8 * h;
    if (key >= t_kv) {
      continue;
    }
    T* dk_row = dk.at(b, kv_h, key) + col;
    T* dv_row = dv.at(b, kv_h, key) + col;
    for (int n = 0; n < D / 8; ++n) {
      *reinterpret_cast<uint32_t*>(dk_row + n * 8) =
          pack<T>(scale * dk_acc[n][2 * h], scale * dk_acc[n][2 * h + 1]);
      *reinterpret_cast<uint32_t*>(dv_row + n * 8) =
          pack<T>(dv_acc[n][2 * h], dv_acc[n][2 * h + 1]);
    }
  }
}

// delta[r] = sum over d of d_out[r, d] * out[r, d] for the rows r = (b * heads + h) * t + i of
// (B, heads, t, D) operands, a warp per row. Where lse_ln is not null (the forward's natural-log
// lse, dense), also lse_log2[r] = lse_ln[r] * log2(e), the backward kernel's base-2 convention.
template <typename T, int D>
__global__ void row_dots(Heads<const T> out, Heads<const T> d_out, float* delta, int heads, int t,
                         int64_t rows, const float* lse_ln = nullptr, float* lse_log2 = nullptr) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < rows;
       r += int64_t(gridDim.x) * blockDim.x / 32) {
    const int64_t bh = r / t, b = bh / heads, h = bh % heads, i = r % t;
    const T* o_row = out.at(b, h, i);
    const T* g_row = d_out.at(b, h, i);
    float s = 0.f;
    for (int d = lane; d < D; d += 32) {
      s += static_cast<float>(o_row[d]) * static_cast<float>(g_row[d]);
    }
    for (int m = 16; m > 0; m /= 2) {
      s += __shfl_xor_sync(0xffffffffu, s, m);
    }
    if (lane == 0) {
      delta[r] = s;
      if (lse_ln != nullptr) {
        lse_log2[r] = lse_ln[r] * 1.4426950408889634f;
      }
    }
  }
}

// The backward kernel for inputs as launch_forward's, given lse in base 2 (from launch_forward
// without output, or the forward's converted by row_dots) and delta (row_dots); dq_acc zeroed,
// float, shaped like q. Returns the launch's error, if any.
template <typename T, int D>
cudaError_t launch_backward(Heads<const T> q, Heads<const T> k, Heads<const T> v,
                            Heads<const T> d_out, const float* lse, const float* delta,
                            Heads<float> dq_acc, Heads<T> dk, Heads<T> dv,
                            const AttentionShape& shape, float scale, cudaStream_t stream) {
  constexpr size_t smem = backward_shared_bytes<D>();
  auto kernel = flash_backward<T, D>;
  if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
      e != cudaSuccess) {
    return e;
  }
  const dim3 grid(static_cast<unsigned>(shape.batch * (shape.heads / shape.group)),
                  static_cast<unsigned>((shape.t_kv + kKeys - 1) / kKeys));
  kernel<<<grid, kBlockThreads, smem, stream>>>(q, k, v, d_out, lse, delta, dq_acc, dk, dv, shape,
                                                scale, scale * 1.4426950408889634f);
  return cudaGetLastError();
}

}  // namespace mlx::core::cu::flash
