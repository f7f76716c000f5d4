// The fused forward pass of scaled_dot_product_attention on the GPU (the kernel is in
// flash_forward.cuh): float16 / bfloat16, head dims 64, 80, 96 and 128, causal or not, with or
// without a mask array, grouped-query heads, operands in any layout whose rows the kernels can
// address. A forward traced for a backward also writes each row's log-sum-exp (natural log, the
// primitive's lse output); a backward without it asks for the log-sum-exp only (base 2).
#include "mlx/backend/cuda/flash_attention.h"
#include "mlx/backend/cuda/flash_forward.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"

namespace mlx::core::cu {

namespace flash {

namespace {

__global__ void fill_neg_inf(float* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    x[i] = -INFINITY;
  }
}

__device__ __forceinline__ bool lets_through(bool keep) { return keep; }
template <typename T>
__device__ __forceinline__ bool lets_through(T term) {
  return !(static_cast<float>(term) == -INFINITY);  // NaN lets through: it reaches the output
}

// One block per tile: blockIdx.x = b * heads + h over the mask's own batch entries and heads,
// blockIdx.y the key tile, blockIdx.z the row tile.
template <typename M>
__global__ void live_tiles(ScoreMask mask, int heads, int t_q, int t_kv, uint8_t* live) {
  const int64_t b = blockIdx.x / heads, h = blockIdx.x % heads;
  const int key_tile = blockIdx.y, row_tile = blockIdx.z;
  const M* m = static_cast<const M*>(mask.data);
  bool any = false;
  for (int i = threadIdx.x; i < kRows * kKeys; i += blockDim.x) {
    const int r = row_tile * kRows + i / kKeys, key = key_tile * kKeys + i % kKeys;
    if (r < t_q && key < t_kv) {
      any |= lets_through(m[mask.offset(b, h, r, key)]);
    }
  }
  any = __syncthreads_or(any);
  if (threadIdx.x == 0) {
    live[(int64_t(blockIdx.x) * gridDim.z + row_tile) * gridDim.y + key_tile] = any;
  }
}

// The mask's own batch entries and heads: one along a broadcast axis.
int mask_batches(const AttentionShape& s) { return s.mask.batch == 0 ? 1 : s.batch; }
int mask_heads(const AttentionShape& s) { return s.mask.head == 0 ? 1 : s.heads; }
int row_tiles(const AttentionShape& s) { return (s.t_q + kRows - 1) / kRows; }
int key_tiles(const AttentionShape& s) { return (s.t_kv + kKeys - 1) / kKeys; }

}  // namespace

size_t live_tiles_bytes(const AttentionShape& shape) {
  return shape.mask.present()
             ? size_t(mask_batches(shape)) * mask_heads(shape) * row_tiles(shape) * key_tiles(shape)
             : 0;
}

void mark_live_tiles(AttentionShape& shape, Dtype dtype, uint8_t* live) {
  if (live_tiles_bytes(shape) == 0) {  // no mask (or no scores)
    return;
  }
  const int heads = mask_heads(shape), rows = row_tiles(shape), keys = key_tiles(shape);
  const dim3 grid(static_cast<unsigned>(mask_batches(shape) * heads), static_cast<unsigned>(keys),
                  static_cast<unsigned>(rows));
  if (shape.mask.kind == ScoreMask::kKeep) {
    live_tiles<bool>
        <<<grid, kBlockThreads, 0, stream()>>>(shape.mask, heads, shape.t_q, shape.t_kv, live);
  } else if (dtype == float16) {
    live_tiles<__half>
        <<<grid, kBlockThreads, 0, stream()>>>(shape.mask, heads, shape.t_q, shape.t_kv, live);
  } else {
    live_tiles<__nv_bfloat16>
        <<<grid, kBlockThreads, 0, stream()>>>(shape.mask, heads, shape.t_q, shape.t_kv, live);
  }
  check_launch("scaled_dot_product_attention (mask tiles)");
  shape.mask.live = live;
  shape.mask.key_tiles = keys;
  shape.mask.live_head = shape.mask.head == 0 ? 0 : int64_t(rows) * keys;
  shape.mask.live_batch = shape.mask.batch == 0 ? 0 : int64_t(heads) * rows * keys;
}

void no_key_lse(float* lse, int64_t n) {
  if (n > 0) {
    fill_neg_inf<<<blocks_for(n), kThreads, 0, stream()>>>(lse, n);
    check_launch("scaled_dot_product_attention (no keys)");
  }
}

void forward_lse(const array& q, const array& k, const array& v, const AttentionShape& shape,
                 float* lse, float scale) {
  dispatch(q.dtype(), q.shape(3), [&]<typename T, int D>() {
    check(
        launch_forward<T, D, false>(heads_of<const T>(q), heads_of<const T>(k),
                                    heads_of<const T>(v), Heads<T>{}, lse, shape, scale, stream()),
        "scaled_dot_product_attention (flash log-sum-exp)");
  });
}

}  // namespace flash

void flash_attention(const array& q, const array& k, const array& v, const array* mask, array& out,
                     float* lse, float scale, bool causal) {
  const flash::MarkedShape marked(q, k, causal, mask);
  flash::dispatch(out.dtype(), q.shape(3), [&]<typename T, int D>() {
    check(flash::launch_forward<T, D, true>(
              flash::heads_of<const T>(q), flash::heads_of<const T>(k), flash::heads_of<const T>(v),
              flash::heads_of<T>(out), lse, marked.shape, scale, stream(),
              /*natural_lse=*/true),
          "scaled_dot_product_attention (flash)");
  });
}

}  // namespace mlx::core::cu
