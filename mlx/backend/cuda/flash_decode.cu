// Decoding's attention: a few query rows against a long key/value cache (flash-decoding's
// scheme). The flash kernels give each (batch, head) one block that walks every key, so a
// batch-1 decode step kept a few dozen of the GPU's SMs busy while the rest idled. Here the
// keys are split into parts, one warp each, enough to fill every SM, and the query heads that
// share a key/value head (grouped-query attention) are scored together, so each cache row is
// read once. Each warp keeps its part's running row maximum and sum (base 2, as the flash
// kernels) and its unnormalized output; a second kernel folds the parts of each row, a block
// per row. The work
// is bound by reading the cache, so the products run on CUDA cores: each lane scores one key
// of the 32 a step takes, then takes its share of the head dim for P V.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "mlx/backend/cuda/flash_attention.cuh"
#include "mlx/backend/cuda/flash_attention.h"
#include "mlx/backend/cuda/flash_forward.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/reduce_ops.cuh"

namespace mlx::core::cu {

namespace {

constexpr int kPartsPerBlock = 4;  // one warp each
constexpr int kMaxDim = 128;
constexpr int kPairsPerLane = kMaxDim / 64;  // head-dim element pairs a lane takes in P V
constexpr int kMaxRows = 16;                 // query rows of one key/value head
constexpr int kMinKeysPerPart = 64;

struct DecodeShape {
  int heads_kv, group, t_q, t_kv;
  int rows;  // group * t_q: row r is query r % t_q of query head kv_head * group + r / t_q
  int dim;
  int parts, keys_per_part;
  bool causal;  // query i sees keys up to i + t_kv - t_q
};

template <typename T>
__device__ __forceinline__ float2 unpack(uint32_t bits) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half22float2(*reinterpret_cast<const __half2*>(&bits));
  } else {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
  }
}

__device__ __forceinline__ float warp_max(float x) {
  for (int m = 16; m > 0; m /= 2) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, m));
  }
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int m = 16; m > 0; m /= 2) {
    x += __shfl_xor_sync(0xffffffffu, x, m);
  }
  return x;
}

// The parts of key/value head blockIdx.x (batch * heads_kv + head): warp w takes keys
// [p * keys_per_part, (p + 1) * keys_per_part) of part p = blockIdx.y * kPartsPerBlock + w and
// writes, per row, its maximum and sum (part_ml) and its output scaled by 2^-maximum (part_o).
// R (>= shape.rows) sizes the per-row registers.
template <typename T, int R>
__global__ void __launch_bounds__(kPartsPerBlock * 32)
    decode_parts(flash::Heads<const T> q, flash::Heads<const T> k, flash::Heads<const T> v,
                 DecodeShape shape, float scale_log2, float* part_o, float2* part_ml) {
  __shared__ __align__(16) float s_q[R][kMaxDim];  // scaled query rows
  __shared__ float s_p[kPartsPerBlock][R][32];     // a step's probabilities
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t group_index = blockIdx.x;
  const int64_t b = group_index / shape.heads_kv;
  const int kv_head = static_cast<int>(group_index % shape.heads_kv);
  const int dim = shape.dim;
  for (int i = threadIdx.x; i < R * kMaxDim; i += blockDim.x) {
    const int r = i / kMaxDim, d = i % kMaxDim;
    s_q[r][d] =
        r < shape.rows && d < dim
            ? static_cast<float>(q.at(b, kv_head * shape.group + r / shape.t_q, r % shape.t_q)[d]) *
                  scale_log2
            : 0.f;
  }
  __syncthreads();

  const int part = blockIdx.y * kPartsPerBlock + warp;
  const int k_begin = part * shape.keys_per_part;
  const int k_end = min(shape.t_kv, k_begin + shape.keys_per_part);
  const int shift = shape.t_kv - shape.t_q;
  const T* kb = k.at(b, kv_head, 0);
  const T* vb = v.at(b, kv_head, 0);
  float row_max[R], row_sum[R], o[R][2 * kPairsPerLane];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.f;  // this lane's share; the warp adds them up at the end
#pragma unroll
    for (int c = 0; c < 2 * kPairsPerLane; ++c) {
      o[r][c] = 0.f;
    }
  }

  for (int k0 = k_begin; k0 < k_end; k0 += 32) {
    // Scores of this lane's key against every row.
    const int key = k0 + lane;
    float s[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      s[r] = 0.f;
    }
    if (key < k_end) {
      // The key row in halves of 64 elements whose eight 16-byte loads are all issued before
      // the first is used, rather than each load waited for in turn; past dim they are zeros,
      // as are the query's columns.
      const T* kr = kb + int64_t(key) * k.row;
#pragma unroll
      for (int h = 0; h < kMaxDim; h += 64) {
        if (h >= dim) {
          break;
        }
        uint4 raw[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          raw[i] = h + 8 * i < dim ? *reinterpret_cast<const uint4*>(kr + h + 8 * i)
                                   : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int d = h + 8 * i;
          const float2 k01 = unpack<T>(raw[i].x), k23 = unpack<T>(raw[i].y),
                       k45 = unpack<T>(raw[i].z), k67 = unpack<T>(raw[i].w);
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const float4 a = *reinterpret_cast<const float4*>(&s_q[r][d]);
            const float4 c = *reinterpret_cast<const float4*>(&s_q[r][d + 4]);
            s[r] += a.x * k01.x + a.y * k01.y + a.z * k23.x + a.w * k23.y + c.x * k45.x +
                    c.y * k45.y + c.z * k67.x + c.w * k67.y;
          }
        }
      }
    }
    // Online softmax over the step's keys; masked scores are -inf.
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool visible =
          key < k_end && r < shape.rows && (!shape.causal || key <= r % shape.t_q + shift);
      const float x = visible ? s[r] : -INFINITY;
      const float m_new = fmaxf(row_max[r], warp_max(x));
      const float base = m_new == -INFINITY ? 0.f : m_new;  // a row that has seen no key yet
      const float alpha = exp2f(row_max[r] - base);
      row_max[r] = m_new;
      const float p = exp2f(x - base);
      row_sum[r] = row_sum[r] * alpha + p;
#pragma unroll
      for (int c = 0; c < 2 * kPairsPerLane; ++c) {
        o[r][c] *= alpha;
      }
      s_p[warp][r][lane] = p;
    }
    __syncwarp();
    // O += P V: each lane its pairs of the head dim, key by key.
    const int n = min(32, k_end - k0);
#pragma unroll 8  // eight V rows' loads in flight
    for (int j = 0; j < n; ++j) {
      const uint32_t* vr = reinterpret_cast<const uint32_t*>(vb + int64_t(k0 + j) * v.row);
      float2 vv[kPairsPerLane];
#pragma unroll
      for (int i = 0; i < kPairsPerLane; ++i) {
        const int pair = lane + 32 * i;
        vv[i] = 2 * pair < dim ? unpack<T>(vr[pair]) : make_float2(0.f, 0.f);
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float p = s_p[warp][r][j];
#pragma unroll
        for (int i = 0; i < kPairsPerLane; ++i) {
          o[r][2 * i] += p * vv[i].x;
          o[r][2 * i + 1] += p * vv[i].y;
        }
      }
    }
    __syncwarp();  // every lane has read s_p before the next step writes it
  }

  const int64_t slot = (group_index * shape.parts + part) * shape.rows;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float sum = warp_sum(row_sum[r]);
    if (r < shape.rows) {
      if (lane == 0) {
        part_ml[slot + r] = make_float2(row_max[r], sum);
      }
      float2* dst = reinterpret_cast<float2*>(part_o + (slot + r) * dim);
#pragma unroll
      for (int i = 0; i < kPairsPerLane; ++i) {
        const int pair = lane + 32 * i;
        if (2 * pair < dim) {
          dst[pair] = make_float2(o[r][2 * i], o[r][2 * i + 1]);
        }
      }
    }
  }
}

constexpr int kFoldWarps = 4;

// A block of kFoldWarps warps per row (batch, key/value head, row): the parts' outputs weighted
// by 2^(their maximum - the row's), divided by the row's sum, into out; the row's log-sum-exp
// (times lse_unit: ln 2 gives natural logs) into lse where not null. The weights go to shared
// memory (parts floats), then each warp sums every kFoldWarps-th part and the warps' sums
// meet in shared memory (kFoldWarps x kMaxDim floats after the weights): a warp per row walked
// hundreds of parts alone.
template <typename T>
__global__ void __launch_bounds__(kFoldWarps * 32)
    decode_fold(const float* part_o, const float2* part_ml, flash::Heads<T> out, float* lse,
                DecodeShape shape, float lse_unit) {
  extern __shared__ float s_fold[];
  float* s_w = s_fold;
  float* s_acc = s_fold + shape.parts;
  __shared__ float s_red[32];  // block_reduce's
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = blockIdx.x;
  const int64_t group_index = row / shape.rows;
  const int r = static_cast<int>(row % shape.rows);
  const float2* ml = part_ml + group_index * shape.parts * shape.rows + r;

  float m = -INFINITY;
  for (int p = threadIdx.x; p < shape.parts; p += blockDim.x) {
    m = fmaxf(m, ml[int64_t(p) * shape.rows].x);
  }
  m = block_reduce<red::Max>(m, s_red);
  const float base = m == -INFINITY ? 0.f : m;
  float sum = 0.f;
  for (int p = threadIdx.x; p < shape.parts; p += blockDim.x) {
    const float2 x = ml[int64_t(p) * shape.rows];
    const float w = exp2f(x.x - base);
    s_w[p] = w;
    sum += x.y * w;
  }
  sum = block_reduce<red::Sum>(sum, s_red);  // its barriers also publish s_w

  float acc[2 * kPairsPerLane] = {};
  for (int p = warp; p < shape.parts; p += kFoldWarps) {
    const float w = s_w[p];
    if (w == 0.f) {  // the part saw no key of this row (the same for the whole warp)
      continue;
    }
    const float2* src = reinterpret_cast<const float2*>(
        part_o + ((group_index * shape.parts + p) * shape.rows + r) * shape.dim);
#pragma unroll
    for (int i = 0; i < kPairsPerLane; ++i) {
      const int pair = lane + 32 * i;
      if (2 * pair < shape.dim) {
        const float2 x = src[pair];
        acc[2 * i] += w * x.x;
        acc[2 * i + 1] += w * x.y;
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kPairsPerLane; ++i) {
    const int pair = lane + 32 * i;
    s_acc[warp * kMaxDim + 2 * pair] = acc[2 * i];
    s_acc[warp * kMaxDim + 2 * pair + 1] = acc[2 * i + 1];
  }
  __syncthreads();
  if (warp != 0) {
    return;
  }
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  const int64_t b = group_index / shape.heads_kv;
  const int head = static_cast<int>(group_index % shape.heads_kv) * shape.group + r / shape.t_q;
  const int query = r % shape.t_q;
  uint32_t* dst = reinterpret_cast<uint32_t*>(out.at(b, head, query));
#pragma unroll
  for (int i = 0; i < kPairsPerLane; ++i) {
    const int pair = lane + 32 * i;
    if (2 * pair < shape.dim) {
      float x = 0.f, y = 0.f;
      for (int w = 0; w < kFoldWarps; ++w) {
        x += s_acc[w * kMaxDim + 2 * pair];
        y += s_acc[w * kMaxDim + 2 * pair + 1];
      }
      dst[pair] = flash::pack<T>(x * inv, y * inv);
    }
  }
  if (lse != nullptr && lane == 0) {
    const int64_t heads = int64_t(shape.heads_kv) * shape.group;
    lse[(b * heads + head) * shape.t_q + query] =
        sum > 0.f ? (m + log2f(sum)) * lse_unit : -INFINITY;
  }
}

template <typename T, int R>
void launch_decode(const array& q, const array& k, const array& v, array& out, float* lse,
                   const DecodeShape& shape, int64_t groups, float scale) {
  const int64_t rows = groups * shape.rows;
  Scratch part_o(sizeof(float) * rows * shape.parts * shape.dim);
  Scratch part_ml(sizeof(float2) * rows * shape.parts);
  const dim3 grid(static_cast<unsigned>(groups),
                  static_cast<unsigned>(shape.parts / kPartsPerBlock));
  decode_parts<T, R><<<grid, kPartsPerBlock * 32, 0, stream()>>>(
      flash::heads_of<const T>(q), flash::heads_of<const T>(k), flash::heads_of<const T>(v), shape,
      scale * 1.4426950408889634f, part_o.as<float>(), part_ml.as<float2>());
  const size_t fold_smem = sizeof(float) * (shape.parts + kFoldWarps * kMaxDim);
  decode_fold<T><<<static_cast<unsigned>(rows), kFoldWarps * 32, fold_smem, stream()>>>(
      part_o.as<float>(), part_ml.as<float2>(), flash::heads_of<T>(out), lse, shape,
      0.6931471805599453f);
  check_launch("scaled_dot_product_attention (flash decoding)");
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

bool flash_decode_applies(const array& q, const array& k, bool causal) {
  static const bool enabled = [] {  // MLX_SDPA_DECODE=0 leaves these calls to the flash kernels
    const char* v = std::getenv("MLX_SDPA_DECODE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  const int64_t rows = q.shape(1) / k.shape(1) * q.shape(2);
  return enabled && rows <= kMaxRows && q.shape(3) <= kMaxDim &&
         (!causal || q.shape(2) <= k.shape(2));
}

void flash_decode(const array& q, const array& k, const array& v, array& out, float* lse,
                  float scale, bool causal) {
  const auto s = flash::attention_shape(q, k, causal);
  const int64_t groups = int64_t(s.batch) * k.shape(1);
  // Enough warps for 16 per SM, none with fewer than kMinKeysPerPart keys (its share of the
  // fold would outweigh its keys), a whole number of blocks.
  const int64_t sms = device(current_device()).props.multiProcessorCount;
  int64_t parts =
      std::clamp<int64_t>(ceil_div(16 * sms, groups), 1, ceil_div(s.t_kv, kMinKeysPerPart));
  parts = ceil_div(parts, kPartsPerBlock) * kPartsPerBlock;
  const DecodeShape shape{static_cast<int>(k.shape(1)),
                          s.group,
                          s.t_q,
                          s.t_kv,
                          s.group * s.t_q,
                          static_cast<int>(q.shape(3)),
                          static_cast<int>(parts),
                          static_cast<int>(ceil_div(s.t_kv, parts)),
                          causal};
  auto by_rows = [&]<typename T>() {
    if (shape.rows == 1) {
      launch_decode<T, 1>(q, k, v, out, lse, shape, groups, scale);
    } else if (shape.rows <= 4) {
      launch_decode<T, 4>(q, k, v, out, lse, shape, groups, scale);
    } else if (shape.rows <= 8) {
      launch_decode<T, 8>(q, k, v, out, lse, shape, groups, scale);
    } else {
      launch_decode<T, kMaxRows>(q, k, v, out, lse, shape, groups, scale);
    }
  };
  if (out.dtype() == float16) {
    by_rows.template operator()<__half>();
  } else {
    by_rows.template operator()<__nv_bfloat16>();
  }
}

}  // namespace mlx::core::cu
