// The fused forward pass of scaled_dot_product_attention (flash attention): float16 / bfloat16,
// head dims 64 and 128, no mask or a causal one, grouped-query heads. The [T_q, T_kv] scores
// are never stored: a block takes 64 query rows (16 per warp) and walks the keys 64 at a time;
// tensor cores (WMMA) form each warp's scores and its P V product, an online softmax keeps the
// running row maximum and sum, and the output is divided by the sum at the end. Scores, the
// probabilities and the running output live in shared memory (a first version; registers
// would be faster). The backward pass asks for each row's log-sum-exp only (kWithOutput false).
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/flash_attention.cuh"
#include "mlx/backend/cuda/flash_attention.h"
#include "mlx/backend/cuda/kernel_utils.cuh"

namespace mlx::core::cu {

namespace {

using namespace flash;

template <int D>
constexpr size_t shared_bytes() {
  return sizeof(uint16_t) * (kRows + 2 * kKeys) * kTileStride<D>  // Q, K, V tiles
         + sizeof(float) * kWarps * 16 * kScoreStride             // scores
         + sizeof(uint16_t) * kWarps * 16 * kProbStride           // probabilities
         + sizeof(float) * kWarps * 16 * kOutStride<D>            // running output
         + sizeof(float) * kWarps * 16 * 2;                       // running max and sum
}

// Writes out (unless kWithOutput is false) and, where lse is not null, each row's log2-sum-exp2
// of its scaled scores (in base 2: log2(sum 2^(s * scale_log2))), -inf for a row that sees no key.
template <typename T, int D, bool kWithOutput>
__global__ void __launch_bounds__(kWarps * 32)
    flash_forward(const T* q, const T* k, const T* v, T* out, float* lse, int heads, int group,
                  int t_q, int t_kv, float scale_log2, bool causal) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem[];
  T* s_q = reinterpret_cast<T*>(smem);
  constexpr int kT = kTileStride<D>, kO = kOutStride<D>;
  T* s_k = s_q + kRows * kT;
  T* s_v = s_k + kKeys * kT;
  float* s_s = reinterpret_cast<float*>(s_v + kKeys * kT);
  T* s_p = reinterpret_cast<T*>(s_s + kWarps * 16 * kScoreStride);
  float* s_o = reinterpret_cast<float*>(s_p + kWarps * 16 * kProbStride);
  float* s_m = s_o + kWarps * 16 * kO;
  float* s_l = s_m + kWarps * 16;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bh = blockIdx.x;  // batch * heads + head
  const int64_t kv_bh = (bh / heads) * (heads / group) + (bh % heads) / group;
  // The longest causal tiles first, for balance.
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kRows;
  const T* qb = q + (bh * t_q + q0) * D;
  const T* kb = k + kv_bh * t_kv * D;
  const T* vb = v + kv_bh * t_kv * D;

  float* w_s = s_s + warp * 16 * kScoreStride;
  T* w_p = s_p + warp * 16 * kProbStride;
  float* w_o = s_o + warp * 16 * kO;
  float* w_m = s_m + warp * 16;
  float* w_l = s_l + warp * 16;

  load_tile<T, D>(s_q, qb, kRows, t_q - q0);
  for (int i = lane; i < 16 * kO; i += 32) {
    w_o[i] = 0.f;
  }
  if (lane < 16) {
    w_m[lane] = -INFINITY;
    w_l[lane] = 0.f;
  }
  __syncwarp();  // every lane reads these rows (the final write too, when no key is seen)
  // Query row i sees keys up to i + t_kv - t_q (causal).
  const int shift = t_kv - t_q;
  int k_end = t_kv;
  if (causal) {
    k_end = max(0, min(t_kv, q0 + kRows + shift));
  }
  // Each lane pair owns one of the warp's 16 rows, each lane every other column of it (so the
  // pair's two lanes read neighbouring words).
  const int row = lane / 2, half = lane % 2;
  const int q_row = q0 + warp * 16 + row;

  for (int k0 = 0; k0 < k_end; k0 += kKeys) {
    __syncthreads();  // the previous step is done with the K and V tiles
    load_tile<T, D>(s_k, kb + int64_t(k0) * D, kKeys, t_kv - k0);
    load_tile<T, D>(s_v, vb + int64_t(k0) * D, kKeys, t_kv - k0);
    __syncthreads();

    // Scores of the warp's 16 rows against the 64 keys.
    warp_products_bt<T, D>(s_q + warp * 16 * kT, s_k, w_s);
    __syncwarp();

    // Online softmax over this step's keys, in base 2.
    float* s_row = w_s + row * kScoreStride + half;
    T* p_row = w_p + row * kProbStride + half;
    float step_max = -INFINITY;
    for (int c = 0; c < kKeys; c += 2) {
      const int key = k0 + half + c;
      const bool seen = key < t_kv && (!causal || key <= q_row + shift);
      const float x = seen ? s_row[c] * scale_log2 : -INFINITY;
      s_row[c] = x;
      step_max = fmaxf(step_max, x);
    }
    step_max = fmaxf(step_max, __shfl_xor_sync(0xffffffffu, step_max, 1));
    const float m_old = w_m[row];
    const float m_new = fmaxf(m_old, step_max);
    const float base = m_new == -INFINITY ? 0.f : m_new;  // a row that has seen no key yet
    float sum = 0.f;
    for (int c = 0; c < kKeys; c += 2) {
      const float p = exp2f(s_row[c] - base);
      p_row[c] = static_cast<T>(p);
      sum += p;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    const float alpha = exp2f(m_old - base);
    __syncwarp();  // both lanes of a pair read w_m before it changes
    if (half == 0) {
      w_m[row] = m_new;
      w_l[row] = w_l[row] * alpha + sum;
    }
    if constexpr (kWithOutput) {
      for (int d = half; d < D; d += 2) {
        w_o[row * kO + d] *= alpha;
      }
      __syncwarp();

      // O += P V.
      warp_accumulate<T, D, wmma::row_major>(w_p, kProbStride, s_v, w_o);
    }
    __syncwarp();
  }

  // Rows that saw no key are zeros.
  if (q_row < t_q && lse != nullptr && half == 0) {
    const float l = w_l[row];
    lse[bh * t_q + q_row] = l > 0.f ? w_m[row] + log2f(l) : -INFINITY;
  }
  if (kWithOutput && q_row < t_q) {
    const float l = w_l[row];
    const float inv = l > 0.f ? 1.f / l : 0.f;
    T* dst = out + (bh * t_q + q_row) * D;
    for (int d = half; d < D; d += 2) {
      dst[d] = static_cast<T>(w_o[row * kO + d] * inv);
    }
  }
}

template <typename T, int D, bool kWithOutput>
void launch(const array& q, const array& k, const array& v, T* out, float* lse, float scale,
            bool causal) {
  const int heads = q.shape(1), group = q.shape(1) / k.shape(1);
  const int t_q = q.shape(2), t_kv = k.shape(2);
  constexpr size_t smem = shared_bytes<D>();
  auto kernel = flash_forward<T, D, kWithOutput>;
  MLX_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>(q.shape(0) * heads),
                  static_cast<unsigned>((t_q + kRows - 1) / kRows));
  kernel<<<grid, kWarps * 32, smem, stream()>>>(q.gpu_data<T>(), k.gpu_data<T>(), v.gpu_data<T>(),
                                                out, lse, heads, group, t_q, t_kv,
                                                scale * 1.4426950408889634f, causal);
  check_launch("scaled_dot_product_attention (flash)");
}

}  // namespace

void flash_attention(const array& queries, const array& keys, const array& values, array& out,
                     float scale, bool causal) {
  array q = dense_copy(queries), k = dense_copy(keys), v = dense_copy(values);
  allocate(out);
  if (out.size() == 0) {
    return;
  }
  if (k.shape(2) == 0) {  // no keys: every row is zeros
    MLX_CUDA_CHECK(cudaMemsetAsync(out.gpu_data<char>(), 0, out.nbytes(), stream()));
    return;
  }
  flash::dispatch(q.dtype(), q.shape(3), [&]<typename T, int D>() {
    launch<T, D, true>(q, k, v, out.gpu_data<T>(), nullptr, scale, causal);
  });
}

void flash_attention_lse(const array& q, const array& k, const array& v, float* lse, float scale,
                         bool causal) {
  flash::dispatch(q.dtype(), q.shape(3), [&]<typename T, int D>() {
    launch<T, D, false>(q, k, v, nullptr, lse, scale, causal);
  });
}

}  // namespace mlx::core::cu
