// The fused forward pass of scaled_dot_product_attention (FlashAttention-2's scheme): a block
// takes 64 query rows of one head (16 per warp, held in registers as A operands) and walks
// the keys 64 at a time, the next K and V tiles copying in while the current ones are used.
// Each warp's scores, their online softmax (running row maximum and sum, in base 2) and its
// output accumulators never leave registers; the output is divided by the row sums at the end
// and written through shared memory in 16-byte rows. The [T_q, T_kv] scores are never stored.
#pragma once

#include <cuda_runtime.h>

#include "mlx/backend/cuda/flash_attention.cuh"
#include "mlx/backend/cuda/scratch.h"

namespace mlx::core::cu::flash {

// A mask array as the op passes it, broadcast to the scores' shape (B, N_q, T_q, T_kv), read
// in place through its strides in elements (zero along broadcast axes): a boolean one keeps
// the scores where it is true, an additive one (of the operands' 16-bit type) is added to the
// scaled scores. Element by element from global memory (it is usually small and broadcast, so
// it stays in cache); the [T_q, T_kv] scores themselves are still never stored.
struct ScoreMask {
  enum Kind : int { kNone, kKeep, kAdditive };
  const void* data = nullptr;
  int64_t batch = 0, head = 0, row = 0, key = 0;
  Kind kind = kNone;
  // Whether each (batch, head, 64-row tile, 64-key tile) lets any score through (mark_live_tiles
  // fills it; without it every tile counts as seen): tiles it hides whole are skipped.
  const uint8_t* live = nullptr;
  int64_t live_batch = 0, live_head = 0;  // strides, zero along the mask's broadcast axes
  int key_tiles = 0;

  __host__ __device__ bool present() const { return kind != kNone; }

  __device__ __forceinline__ bool tile_live(int64_t b, int64_t h, int row_tile,
                                            int key_tile) const {
    return live == nullptr ||
           live[b * live_batch + h * live_head + int64_t(row_tile) * key_tiles + key_tile] != 0;
  }

  // The element offset of (b, h, r, k).
  __device__ __forceinline__ int64_t offset(int64_t b, int64_t h, int r, int k) const {
    return b * batch + h * head + r * row + k * key;
  }

  // s[n][e] += the mask's term at offset(n, e), in base 2 as the scaled scores are: -inf where a
  // boolean mask is false (else 0), m * log2(e) for an additive m. Every offset must lie within
  // the mask (callers clamp rows and keys past the end; their scores are masked anyway).
  template <typename T, int N, typename Offset>
  __device__ __forceinline__ void add_to(float (&s)[N][4], Offset offset) const {
    if (kind == kKeep) {
      add_loaded<bool>(s, offset, [](bool keep) { return keep ? 0.f : -INFINITY; });
    } else {
      add_loaded<T>(s, offset, [](T m) { return static_cast<float>(m) * 1.4426950408889634f; });
    }
  }

 private:
  // The loads of four accumulator blocks (16 elements) are all issued before the first is
  // used, so that their latencies overlap instead of adding up.
  template <typename M, int N, typename Offset, typename Term>
  __device__ __forceinline__ void add_loaded(float (&s)[N][4], Offset offset, Term term) const {
    constexpr int kBatch = 4;
    const M* m = static_cast<const M*>(data);
#pragma unroll
    for (int n0 = 0; n0 < N; n0 += kBatch) {
      M loaded[kBatch][4];
#pragma unroll
      for (int n = 0; n < kBatch; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          loaded[n][e] = m[offset(n0 + n, e)];
        }
      }
#pragma unroll
      for (int n = 0; n < kBatch; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[n0 + n][e] += term(loaded[n][e]);
        }
      }
    }
  }
};

struct AttentionShape {
  int batch, heads, group;  // query heads per key/value head
  int t_q, t_kv;
  bool causal;  // query row i sees keys up to i + t_kv - t_q
  ScoreMask mask = {};
};

// Of q (B, N_q, T_q, D) and k (B, N_kv, T_kv, D), arrays of any type with shape(i); with the
// mask array (B, N_q, T_q, T_kv) where mask is not null (bool_ or q's dtype, on the GPU).
template <typename Array>
AttentionShape attention_shape(const Array& q, const Array& k, bool causal,
                               const Array* mask = nullptr) {
  AttentionShape shape{static_cast<int>(q.shape(0)),
                       static_cast<int>(q.shape(1)),
                       static_cast<int>(q.shape(1) / k.shape(1)),
                       static_cast<int>(q.shape(2)),
                       static_cast<int>(k.shape(2)),
                       causal};
  if (mask != nullptr) {
    shape.mask = {mask->template gpu_data<char>(),
                  mask->strides(0),
                  mask->strides(1),
                  mask->strides(2),
                  mask->strides(3),
                  mask->dtype() == bool_ ? ScoreMask::kKeep : ScoreMask::kAdditive};
  }
  return shape;
}

// Device bytes mark_live_tiles needs for shape's mask (none without one).
size_t live_tiles_bytes(const AttentionShape& shape);

// Marks, at live (live_tiles_bytes of device memory), the 64 x 64 tiles of scores through which
// shape's mask lets any score (a true, or an additive term of `dtype` above -inf), per batch
// entry and head the mask has (one along its broadcast axes), and points shape.mask at them, so
// that the kernels skip the tiles it hides whole (a causal mask given as an array, padding).
// Does nothing without a mask.
void mark_live_tiles(AttentionShape& shape, Dtype dtype, uint8_t* live);

// attention_shape's result for q, k and the mask, its live tiles marked in memory it owns until
// the launches that read them are queued.
struct MarkedShape {
  template <typename Array>
  MarkedShape(const Array& q, const Array& k, bool causal, const Array* mask)
      : shape(attention_shape(q, k, causal, mask)), live(live_tiles_bytes(shape)) {
    mark_live_tiles(shape, q.dtype(), live.template as<uint8_t>());
  }
  AttentionShape shape;
  Scratch live;
};

// The kernels' view of an array (B, N, T, D) whose rows they can address (see Heads): T is
// const for inputs, so that reading does not mark the host copy stale.
template <typename T, typename Array>
Heads<T> heads_of(Array& a) {
  return {a.template gpu_data<std::remove_const_t<T>>(), a.strides(0), a.strides(1), a.strides(2)};
}

template <int D>
constexpr size_t forward_shared_bytes() {
  return sizeof(uint16_t) * (kRows + 4 * kKeys) * kStride<D>;  // Q, then K and V twice
}

// Writes out (unless kWithOutput is false) and, where lse is not null, each row's
// log2-sum-exp2 of its scaled scores (log2(sum 2^(s * scale_log2))) times lse_unit: 1 keeps
// it in base 2 (the backward kernel's convention), ln 2 makes it the natural log-sum-exp of
// the scaled scores (the primitive's lse output). -inf for a row that sees no key.
template <typename T, int D, bool kWithOutput>
__global__ void __launch_bounds__(kBlockThreads)
    flash_forward(Heads<const T> q, Heads<const T> k, Heads<const T> v, Heads<T> out, float* lse,
                  AttentionShape shape, float scale_log2, float lse_unit) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int S = kStride<D>;
  T* s_q = reinterpret_cast<T*>(smem);
  T* s_k = s_q + kRows * S;      // two tiles
  T* s_v = s_k + 2 * kKeys * S;  // two tiles
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int t_q = shape.t_q, t_kv = shape.t_kv;

  const int64_t bh = blockIdx.x;  // batch * heads + head
  const int64_t b = bh / shape.heads, h = bh % shape.heads, kv_h = h / shape.group;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kRows;  // the longest causal tiles first
  const T* kb = k.at(b, kv_h, 0);
  const T* vb = v.at(b, kv_h, 0);
  const int shift = t_kv - t_q;
  const int k_end = shape.causal ? max(0, min(t_kv, q0 + kRows + shift)) : t_kv;
  const int tiles = (k_end + kKeys - 1) / kKeys;

  // The first key tile at or after j that the mask does not hide from all of the block's rows.
  auto next_live = [&](int j) {
    while (j < tiles && !shape.mask.tile_live(b, h, q0 / kRows, j)) {
      ++j;
    }
    return j;
  };
  // Key tile j into buffer `buf`.
  auto load_keys = [&](int j, int buf) {
    const int k0 = j * kKeys;
    load_tile_async<T, D>(s_k + buf * kKeys * S, kb + int64_t(k0) * k.row, k.row, kKeys, t_kv - k0);
    load_tile_async<T, D>(s_v + buf * kKeys * S, vb + int64_t(k0) * v.row, v.row, kKeys, t_kv - k0);
  };

  load_tile_async<T, D>(s_q, q.at(b, h, q0), q.row, kRows, t_q - q0);
  int j = next_live(0);
  if (j < tiles) {
    load_keys(j, 0);
  }
  commit_async();

  // This thread's rows of the warp's 16: row0 and row0 + 8.
  const int row0 = q0 + warp * 16 + lane / 4;
  const int col = 2 * (lane % 4);
  uint32_t qf[D / 16][4];
  float o[D / 8][4] = {};
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.f, 0.f};  // this thread's part; the row's four threads add up at the end
  // The mask's offsets of this thread's rows (clamped to the last row: the rows past it are
  // never stored).
  const int64_t mask_rows[2] = {shape.mask.offset(b, h, min(row0, t_q - 1), 0),
                                shape.mask.offset(b, h, min(row0 + 8, t_q - 1), 0)};

  for (int step = 0; j < tiles; ++step) {
    wait_async();
    __syncthreads();  // tile j is in, and every warp is done with the step before
    if (step == 0) {
      for (int kk = 0; kk < D / 16; ++kk) {
        load_a<S>(qf[kk], s_q + warp * 16 * S, kk * 16, lane);
      }
    }
    const int k0 = j * kKeys;
    const int next = next_live(j + 1);
    if (next < tiles) {
      load_keys(next, (step + 1) % 2);
    }
    commit_async();
    const T* kt = s_k + (step % 2) * kKeys * S;
    const T* vt = s_v + (step % 2) * kKeys * S;

    // Scores of the warp's rows against the tile's keys.
    float s[kKeys / 8][4] = {};
    for (int kk = 0; kk < D / 16; ++kk) {
      mma_row_of_rows<kKeys, S>(s, qf[kk], kt, kk * 16, lane);
    }

    // Online softmax, in base 2. Only tiles that reach past t_kv or the diagonal, or that a
    // mask array covers, mask.
    const bool masked = shape.mask.present() || k0 + kKeys > t_kv ||
                        (shape.causal && k0 + kKeys - 1 > q0 + warp * 16 + shift);
    for (int n = 0; n < kKeys / 8; ++n) {
      for (int e = 0; e < 4; ++e) {
        s[n][e] *= scale_log2;
      }
    }
    if (shape.mask.present()) {
      shape.mask.add_to<T>(s, [&](int n, int e) {
        return mask_rows[e / 2] + min(k0 + n * 8 + col + (e & 1), t_kv - 1) * shape.mask.key;
      });
    }
    float step_max[2] = {-INFINITY, -INFINITY};
    for (int n = 0; n < kKeys / 8; ++n) {
      for (int e = 0; e < 4; ++e) {
        float x = s[n][e];
        if (masked) {
          const int key = k0 + n * 8 + col + (e & 1), row = row0 + (e / 2) * 8;
          if (key >= t_kv || (shape.causal && key > row + shift)) {
            x = -INFINITY;
          }
        }
        s[n][e] = x;
        step_max[e / 2] = fmaxf(step_max[e / 2], x);
      }
    }
    float base[2], alpha[2];
    for (int i = 0; i < 2; ++i) {
      step_max[i] = fmaxf(step_max[i], __shfl_xor_sync(0xffffffffu, step_max[i], 1));
      step_max[i] = fmaxf(step_max[i], __shfl_xor_sync(0xffffffffu, step_max[i], 2));
      const float m_new = fmaxf(row_max[i], step_max[i]);
      base[i] = m_new == -INFINITY ? 0.f : m_new;  // a row that has seen no key yet
      alpha[i] = exp2f(row_max[i] - base[i]);
      row_max[i] = m_new;
    }
    float step_sum[2] = {0.f, 0.f};
    for (int n = 0; n < kKeys / 8; ++n) {
      for (int e = 0; e < 4; ++e) {
        s[n][e] = exp2f(s[n][e] - base[e / 2]);
        step_sum[e / 2] += s[n][e];
      }
    }
    for (int i = 0; i < 2; ++i) {
      row_sum[i] = row_sum[i] * alpha[i] + step_sum[i];
    }

    if constexpr (kWithOutput) {
      for (int n = 0; n < D / 8; ++n) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
      }
      // O += P V, P straight from the score registers.
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        uint32_t a[4];
        accumulators_as_a<T>(a, s, kk);
        mma_row<D, S>(o, a, vt, kk * 16, lane);
      }
    }
    j = next;
  }
  // No copy may still be landing when the output is staged in the Q tile (its rows were copied
  // in by every warp, and a block whose rows see no key never waited for them in the loop) or
  // when the block exits.
  wait_async();
  __syncthreads();

  for (int i = 0; i < 2; ++i) {
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 1);
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 2);
  }
  if (lse != nullptr && lane % 4 == 0) {
    for (int i = 0; i < 2; ++i) {
      const int row = row0 + 8 * i;
      if (row < t_q) {
        lse[bh * t_q + row] =
            row_sum[i] > 0.f ? (row_max[i] + log2f(row_sum[i])) * lse_unit : -INFINITY;
      }
    }
  }
  if constexpr (kWithOutput) {
    // Through the warp's own rows of the Q tile (its fragments are in registers), so that the
    // global writes are whole 16-byte pieces of rows. Rows that saw no key are zeros.
    T* w_rows = s_q + warp * 16 * S;
    const float inv[2] = {row_sum[0] > 0.f ? 1.f / row_sum[0] : 0.f,
                          row_sum[1] > 0.f ? 1.f / row_sum[1] : 0.f};
    for (int n = 0; n < D / 8; ++n) {
      for (int i = 0; i < 2; ++i) {
        *reinterpret_cast<uint32_t*>(w_rows + (lane / 4 + 8 * i) * S + n * 8 + col) =
            pack<T>(o[n][2 * i] * inv[i], o[n][2 * i + 1] * inv[i]);
      }
    }
    __syncwarp();
    constexpr int kPerRow = D / 8;
    for (int i = lane; i < 16 * kPerRow; i += 32) {
      const int r = i / kPerRow, c = i % kPerRow;
      const int row = q0 + warp * 16 + r;
      if (row < t_q) {
        reinterpret_cast<uint4*>(out.at(b, h, row))[c] =
            *reinterpret_cast<const uint4*>(w_rows + r * S + c * 8);
      }
    }
  }
}

// q (B, N_q, T_q, D), k and v (B, N_kv, T_kv, D), out like q; T_kv > 0. lse is null or dense,
// B * N_q * T_q floats: natural logs with `natural_lse`, else base 2. Returns the launch's error,
// if any.
template <typename T, int D, bool kWithOutput>
cudaError_t launch_forward(Heads<const T> q, Heads<const T> k, Heads<const T> v, Heads<T> out,
                           float* lse, const AttentionShape& shape, float scale,
                           cudaStream_t stream, bool natural_lse = false) {
  constexpr size_t smem = forward_shared_bytes<D>();
  auto kernel = flash_forward<T, D, kWithOutput>;
  if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
      e != cudaSuccess) {
    return e;
  }
  const dim3 grid(static_cast<unsigned>(shape.batch * shape.heads),
                  static_cast<unsigned>((shape.t_q + kRows - 1) / kRows));
  kernel<<<grid, kBlockThreads, smem, stream>>>(q, k, v, out, lse, shape,
                                                scale * 1.4426950408889634f,
                                                natural_lse ? 0.6931471805599453f : 1.f);
  return cudaGetLastError();
}

}  // namespace mlx::core::cu::flash
