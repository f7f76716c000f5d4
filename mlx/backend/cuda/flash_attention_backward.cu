// The fused backward pass of scaled_dot_product_attention, for the inputs the forward kernel
// takes (flash_attention.cu). As in FlashAttention-2: a block owns 64 keys of one key/value
// head and walks the query tiles of every query head in its group; per tile it recomputes the
// probabilities P = 2^(s * scale_log2 - lse) from the forward's row log-sum-exp, then
//   dV += P^T dO,  dP = dO V^T,  dS = P (dP - delta)  (delta = rowsum(dO * O)),
//   dK += scale dS^T Q,  dQ += scale dS K.
// dK and dV accumulate in shared memory (no other block touches those keys); dQ is summed
// over the key blocks with float atomics into a float32 buffer, converted at the end. Scores,
// P and dS live in shared-memory tiles between the tensor-core (WMMA) products.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/flash_attention.cuh"
#include "mlx/backend/cuda/flash_attention.h"
#include "mlx/backend/cuda/kernel_utils.cuh"

namespace mlx::core::cu {

namespace {

using namespace flash;

template <int D>
constexpr size_t backward_shared_bytes() {
  return sizeof(uint16_t) * 4 * kKeys * kTileStride<D>       // K, V, Q and dO tiles
         + sizeof(float) * 2 * kWarps * 16 * kScoreStride    // scores (then dQ staging) and dP
         + sizeof(uint16_t) * 2 * kWarps * 16 * kProbStride  // P and dS, 16-bit
         + sizeof(float) * 2 * kKeys * kOutStride<D>;        // dK and dV accumulators
}

template <typename T, int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_backward(const T* q, const T* k, const T* v, const T* d_out, const float* lse,
                   const float* delta, float* dq, T* dk, T* dv, int heads, int group, int t_q,
                   int t_kv, float scale, float scale_log2, bool causal) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int kT = kTileStride<D>, kO = kOutStride<D>;
  T* s_k = reinterpret_cast<T*>(smem);
  T* s_v = s_k + kKeys * kT;
  T* s_q = s_v + kKeys * kT;
  T* s_do = s_q + kRows * kT;
  float* s_s = reinterpret_cast<float*>(s_do + kRows * kT);  // scores, then dQ staging
  float* s_dp = s_s + kWarps * 16 * kScoreStride;
  T* s_p = reinterpret_cast<T*>(s_dp + kWarps * 16 * kScoreStride);
  T* s_ds = s_p + kWarps * 16 * kProbStride;
  float* s_dk = reinterpret_cast<float*>(s_ds + kWarps * 16 * kProbStride);
  float* s_dv = s_dk + kKeys * kO;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t kv_bh = blockIdx.x;  // batch * kv_heads + kv_head
  const int kv_heads = heads / group;
  const int64_t batch = kv_bh / kv_heads, kv_head = kv_bh % kv_heads;
  const int k0 = blockIdx.y * kKeys;
  const int shift = t_kv - t_q;  // query row i sees keys up to i + shift (causal)

  load_tile<T, D>(s_k, k + (kv_bh * t_kv + k0) * D, kKeys, t_kv - k0);
  load_tile<T, D>(s_v, v + (kv_bh * t_kv + k0) * D, kKeys, t_kv - k0);
  for (int i = threadIdx.x; i < kKeys * kO; i += blockDim.x) {
    s_dk[i] = 0.f;
    s_dv[i] = 0.f;
  }

  float* w_s = s_s + warp * 16 * kScoreStride;
  float* w_dp = s_dp + warp * 16 * kScoreStride;
  T* w_p = s_p + warp * 16 * kProbStride;
  T* w_ds = s_ds + warp * 16 * kProbStride;
  // Each lane pair owns one of the warp's 16 query rows, each lane every other key of it.
  const int row = lane / 2, half = lane % 2;
  // The first query tile that sees a key of this block.
  const int q_first = causal ? max(0, k0 - shift) / kRows * kRows : 0;

  for (int h = 0; h < group; ++h) {
    const int64_t bh = batch * heads + kv_head * group + h;
    for (int q0 = q_first; q0 < t_q; q0 += kRows) {
      __syncthreads();  // the previous tile is done with Q, dO, P and dS
      load_tile<T, D>(s_q, q + (bh * t_q + q0) * D, kRows, t_q - q0);
      load_tile<T, D>(s_do, d_out + (bh * t_q + q0) * D, kRows, t_q - q0);
      __syncthreads();

      // The warp's scores and dP = dO V^T.
      warp_products_bt<T, D>(s_q + warp * 16 * kT, s_k, w_s);
      warp_products_bt<T, D>(s_do + warp * 16 * kT, s_v, w_dp);
      __syncwarp();

      // P and dS of the warp's rows; masked keys and rows past t_q get zeros.
      const int q_row = q0 + warp * 16 + row;
      const bool row_valid = q_row < t_q;
      const float row_lse = row_valid ? lse[bh * t_q + q_row] : 0.f;
      const float row_delta = row_valid ? delta[bh * t_q + q_row] : 0.f;
      for (int c = half; c < kKeys; c += 2) {
        const int key = k0 + c;
        const bool seen = row_valid && key < t_kv && (!causal || key <= q_row + shift);
        const float p = seen ? exp2f(w_s[row * kScoreStride + c] * scale_log2 - row_lse) : 0.f;
        const float ds = p * (w_dp[row * kScoreStride + c] - row_delta);
        w_p[row * kProbStride + c] = static_cast<T>(p);
        w_ds[row * kProbStride + c] = static_cast<T>(ds);
      }
      __syncthreads();  // dK and dV read every warp's P and dS

      // Warp w accumulates keys [16 w, 16 w + 16): dV += P^T dO, dK += dS^T Q.
      warp_accumulate<T, D, wmma::col_major>(s_p + warp * 16, kProbStride, s_do,
                                             s_dv + warp * 16 * kO);
      warp_accumulate<T, D, wmma::col_major>(s_ds + warp * 16, kProbStride, s_q,
                                             s_dk + warp * 16 * kO);

      // dQ of the warp's rows += dS K, 16 columns at a time through the warp's score tile.
      warp_product_columns<T, D, wmma::row_major>(
          w_ds, kProbStride, s_k, [](int, auto& acc) { wmma::fill_fragment(acc, 0.f); },
          [&](int n, auto& acc) {
            wmma::store_matrix_sync(w_s, acc, kScoreStride, wmma::mem_row_major);
            __syncwarp();
            for (int i = lane; i < 16 * 16; i += 32) {
              const int r = i / 16, col = i % 16;
              if (q0 + warp * 16 + r < t_q) {
                atomicAdd(dq + (bh * t_q + q0 + warp * 16 + r) * D + n * 16 + col,
                          scale * w_s[r * kScoreStride + col]);
              }
            }
            __syncwarp();
          });
    }
  }
  __syncthreads();
  const int valid = min(kKeys, t_kv - k0);
  for (int i = threadIdx.x; i < valid * D; i += blockDim.x) {
    const int r = i / D, d = i % D;
    const int64_t at = (kv_bh * t_kv + k0 + r) * D + d;
    dk[at] = static_cast<T>(scale * s_dk[r * kO + d]);
    dv[at] = static_cast<T>(s_dv[r * kO + d]);
  }
}

// delta[r] = sum over d of d_out[r, d] * out[r, d], a warp per row.
template <typename T, int D>
__global__ void row_dots(const T* out, const T* d_out, float* delta, int64_t rows) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < rows;
       r += int64_t(gridDim.x) * blockDim.x / 32) {
    float s = 0.f;
    for (int d = lane; d < D; d += 32) {
      s += static_cast<float>(out[r * D + d]) * static_cast<float>(d_out[r * D + d]);
    }
    for (int m = 16; m > 0; m /= 2) {
      s += __shfl_xor_sync(0xffffffffu, s, m);
    }
    if (lane == 0) {
      delta[r] = s;
    }
  }
}

template <typename T>
__global__ void float_to(const float* src, T* dst, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = static_cast<T>(src[i]);
  }
}

}  // namespace

void flash_attention_backward(const array& queries, const array& keys, const array& values,
                              const array& out, const array& d_out, array& dq, array& dk, array& dv,
                              float scale, bool causal) {
  array q = dense_copy(queries), k = dense_copy(keys), v = dense_copy(values);
  array o = dense_copy(out), g = dense_copy(d_out, out.dtype());
  for (array* a : {&dq, &dk, &dv}) {
    allocate(*a);
  }
  const int64_t rows = q.shape(0) * q.shape(1) * q.shape(2);
  const int t_kv = k.shape(2);
  if (q.size() == 0 || t_kv == 0) {  // no queries or no keys: every gradient is zero
    for (array* a : {&dq, &dk, &dv}) {
      if (a->nbytes() > 0) {
        MLX_CUDA_CHECK(cudaMemsetAsync(a->gpu_data<char>(), 0, a->nbytes(), stream()));
      }
    }
    return;
  }
  Scratch lse(rows * sizeof(float)), delta(rows * sizeof(float));
  Scratch dq_acc(q.size() * sizeof(float));
  MLX_CUDA_CHECK(cudaMemsetAsync(dq_acc.as<void>(), 0, q.size() * sizeof(float), stream()));
  flash_attention_lse(q, k, v, lse.as<float>(), scale, causal);
  flash::dispatch(q.dtype(), q.shape(3), [&]<typename T, int D>() {
    row_dots<T, D><<<blocks_for(rows * 32), kThreads, 0, stream()>>>(
        o.gpu_data<T>(), g.gpu_data<T>(), delta.as<float>(), rows);
    constexpr size_t smem = backward_shared_bytes<D>();
    auto kernel = flash_backward<T, D>;
    MLX_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
    const int heads = q.shape(1), group = q.shape(1) / k.shape(1);
    const dim3 grid(static_cast<unsigned>(k.shape(0) * k.shape(1)),
                    static_cast<unsigned>((t_kv + kKeys - 1) / kKeys));
    kernel<<<grid, kWarps * 32, smem, stream()>>>(
        q.gpu_data<T>(), k.gpu_data<T>(), v.gpu_data<T>(), g.gpu_data<T>(), lse.as<float>(),
        delta.as<float>(), dq_acc.as<float>(), dk.gpu_data<T>(), dv.gpu_data<T>(), heads, group,
        q.shape(2), t_kv, scale, scale * 1.4426950408889634f, causal);
    float_to<T><<<blocks_for(q.size()), kThreads, 0, stream()>>>(dq_acc.as<float>(),
                                                                 dq.gpu_data<T>(), q.size());
  });
  check_launch("scaled_dot_product_attention vjp (flash)");
}

}  // namespace mlx::core::cu
