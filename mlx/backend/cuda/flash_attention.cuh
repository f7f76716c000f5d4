// What the fused attention kernels share (flash_attention.cu forward, flash_attention_backward.cu):
// 64-row tiles of 16-bit Q, K, V (and dO) in shared memory, 16 rows per warp, tensor-core
// (WMMA) products through shared-memory tiles. Every shared row is padded (kPad16 / kPad32
// elements) so that the rows a warp touches at once start in different banks: unpadded, the
// 64- and 128-wide rows all began in bank 0 and each access was a 16- to 32-way conflict.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <type_traits>

#include "mlx/dtype.h"

namespace mlx::core::cu::flash {

constexpr int kRows = 64;  // query rows per tile
constexpr int kKeys = 64;  // keys per tile
constexpr int kWarps = kRows / 16;
// Row padding, in elements: WMMA wants 16-byte multiples (and 32-byte aligned tiles, which
// these strides keep).
constexpr int kPad16 = 8, kPad32 = 4;
constexpr int kScoreStride = kKeys + kPad32, kProbStride = kKeys + kPad16;
template <int D>
constexpr int kTileStride = D + kPad16;  // Q, K, V and dO rows
template <int D>
constexpr int kOutStride = D + kPad32;  // float accumulators of D columns

// rows x D elements from src (row stride D) into dst (row stride kTileStride), zeros past
// `valid` rows; 16-byte loads by the whole block.
template <typename T, int D>
__device__ void load_tile(T* dst, const T* src, int rows, int valid) {
  constexpr int kVec = 8;  // 8 16-bit values per uint4
  constexpr int kPerRow = D / kVec;
  for (int i = threadIdx.x; i < rows * kPerRow; i += blockDim.x) {
    const int r = i / kPerRow, c = i % kPerRow;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < valid) {
      v = reinterpret_cast<const uint4*>(src)[i];
    }
    reinterpret_cast<uint4*>(dst + r * kTileStride<D>)[c] = v;
  }
}

// dst (16 x kKeys floats, row stride kScoreStride) = a (16 x D) times b^T (kKeys x D), both
// 16-bit tiles with row stride kTileStride: a warp's scores Q K^T, or its dP = dO V^T.
template <typename T, int D>
__device__ void warp_products_bt(const T* a, const T* b, float* dst) {
  using namespace nvcuda;
  constexpr int kT = kTileStride<D>;
  for (int j = 0; j < kKeys / 16; ++j) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.f);
    for (int d = 0; d < D; d += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
      wmma::load_matrix_sync(fa, a + d, kT);
      wmma::load_matrix_sync(fb, b + j * 16 * kT + d, kT);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(dst + j * 16, acc, kScoreStride, wmma::mem_row_major);
  }
}

// The 16 x D product A B, 16 columns at a time: for each column block n, acc = init(n, acc),
// acc += A B[:, 16n : 16n + 16], then done(n, acc). A is 16 x 64 16-bit values with leading
// dimension lda (row_major: the warp's rows of P or dS; col_major: the transpose of a 64 x 16
// column block, P^T or dS^T); B is 64 x D 16-bit rows with stride kTileStride (V, dO, Q, K).
template <typename T, int D, typename ALayout, typename Init, typename Done>
__device__ void warp_product_columns(const T* a, int lda, const T* b, Init init, Done done) {
  using namespace nvcuda;
  constexpr int kT = kTileStride<D>;
  constexpr bool kTransposed = std::is_same_v<ALayout, wmma::col_major>;
  for (int n = 0; n < D / 16; ++n) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    init(n, acc);
    for (int kk = 0; kk < 64; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, ALayout> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
      wmma::load_matrix_sync(fa, kTransposed ? a + kk * lda : a + kk, lda);
      wmma::load_matrix_sync(fb, b + kk * kT + n * 16, kT);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    done(n, acc);
  }
}

// c (16 x D floats, row stride kOutStride) += A B, as above.
template <typename T, int D, typename ALayout>
__device__ void warp_accumulate(const T* a, int lda, const T* b, float* c) {
  using namespace nvcuda;
  constexpr int kO = kOutStride<D>;
  warp_product_columns<T, D, ALayout>(
      a, lda, b,
      [&](int n, auto& acc) { wmma::load_matrix_sync(acc, c + n * 16, kO, wmma::mem_row_major); },
      [&](int n, auto& acc) { wmma::store_matrix_sync(c + n * 16, acc, kO, wmma::mem_row_major); });
}

// f.template operator()<T, D>() for the 16-bit type and head dim the kernels take.
template <typename F>
void dispatch(Dtype dtype, int head_dim, F&& f) {
  if (dtype == float16) {
    head_dim == 64 ? f.template operator()<__half, 64>() : f.template operator()<__half, 128>();
  } else {
    head_dim == 64 ? f.template operator()<__nv_bfloat16, 64>()
                   : f.template operator()<__nv_bfloat16, 128>();
  }
}

}  // namespace mlx::core::cu::flash
