// What the fused attention kernels share (flash_forward.cuh, flash_backward.cuh): 64-row
// tiles of 16-bit Q, K, V (and dO) copied into shared memory asynchronously (cp.async), and
// warp-level tensor-core products (mma.sync m16n8k16, float accumulators) whose operands come
// from shared memory through ldmatrix and whose results stay in registers. The fragment
// layouts are PTX's: a thread of lane l holds, of a 16 x 8 float accumulator, rows l / 4 and
// l / 4 + 8 at columns 2 (l % 4) and 2 (l % 4) + 1; the same positions of two neighbouring
// accumulators, packed to 16 bits, are the A operand of the next product (so P never leaves
// registers). Every shared row is padded by kPad elements so that the eight rows an ldmatrix
// reads start in different banks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "mlx/dtype.h"

namespace mlx::core::cu::flash {

constexpr int kRows = 64;  // query rows per tile, 16 per warp
constexpr int kKeys = 64;  // keys per tile
constexpr int kWarps = 4;
constexpr int kBlockThreads = kWarps * 32;
constexpr int kPad = 8;
template <int D>
constexpr int kStride = D + kPad;  // elements per shared row of D columns

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory without passing through registers; zeros when !valid
// (src is then not read).
__device__ __forceinline__ void copy_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(valid ? 16 : 0));
}

// One float, as above.
__device__ __forceinline__ void copy_async4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void commit_async() { asm volatile("cp.async.commit_group;\n"); }

// Waits for this thread's copies; the block still needs a barrier before reading others'.
__device__ __forceinline__ void wait_async() { asm volatile("cp.async.wait_group 0;\n"); }

// A (B, N, T, D) operand in global memory: strides in elements, each row's D elements
// contiguous and 16-byte aligned. The kernels take any such layout, so the transposed views
// an attention layer passes (heads split out of one projection, time-major) need no copy, and
// they write their results in the axis order the layer reads them back in.
template <typename T>
struct Heads {
  T* data;
  int64_t batch, head, row;
  __host__ __device__ T* at(int64_t b, int64_t h, int64_t r) const {
    return data + b * batch + h * head + r * row;
  }
};

// Heads over a dense (B, N, T, D) buffer.
template <typename T>
Heads<T> dense_heads(T* data, int heads, int t, int d) {
  return {data, int64_t(heads) * t * d, int64_t(t) * d, d};
}

// `rows` x D elements from src (row stride src_stride) into dst (row stride kStride), zeros
// past `valid` rows; the whole block issues the copies.
template <typename T, int D>
__device__ void load_tile_async(T* dst, const T* src, int64_t src_stride, int rows, int valid) {
  constexpr int kPerRow = D / 8;  // 16-byte pieces
  for (int i = threadIdx.x; i < rows * kPerRow; i += blockDim.x) {
    const int r = i / kPerRow, c = i % kPerRow;
    const bool ok = r < valid;
    copy_async16(dst + r * kStride<D> + c * 8, ok ? src + r * src_stride + c * 8 : src, ok);
  }
}

__device__ __forceinline__ void load_matrices(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

__device__ __forceinline__ void load_matrices_transposed(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

// The A operand (16 x 16) at rows [0, 16) and columns [k, k + 16) of a tile stored row by row
// with row stride S.
template <int S, typename T>
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const T* tile, int k, int lane) {
  load_matrices(a, tile + (lane % 16) * S + k + (lane / 16) * 8);
}

// The A operand at rows [m, m + 16) and columns [k, k + 16) of the transpose of a tile stored
// row by row (row index = the operand's column).
template <int S, typename T>
__device__ __forceinline__ void load_a_transposed(uint32_t (&a)[4], const T* tile, int m, int k,
                                                  int lane) {
  load_matrices_transposed(a,
                           tile + (k + lane % 8 + (lane / 16) * 8) * S + m + ((lane / 8) % 2) * 8);
}

// B operands (16 x 8) of two neighbouring column blocks, [n, n + 8) in b[0..1] and
// [n + 8, n + 16) in b[2..3], rows [k, k + 16), where the tile stores the operand's columns as
// its rows (K or Q for a product with their transpose).
template <int S, typename T>
__device__ __forceinline__ void load_b_of_rows(uint32_t (&b)[4], const T* tile, int n, int k,
                                               int lane) {
  load_matrices(b, tile + (n + lane % 8 + (lane / 16) * 8) * S + k + ((lane / 8) % 2) * 8);
}

// As above where the tile stores the operand itself row by row (V, dO, Q, K as right factors).
template <int S, typename T>
__device__ __forceinline__ void load_b(uint32_t (&b)[4], const T* tile, int k, int n, int lane) {
  load_matrices_transposed(b,
                           tile + (k + lane % 8 + ((lane / 8) % 2) * 8) * S + n + (lane / 16) * 8);
}

// c += a b for a 16 x 16 A and a 16 x 8 B of 16-bit T, float c.
template <typename T>
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, "
        "%7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// c[n] += A B for every 8-column block n of a 16 x N product, B 16 rows at k of a tile that
// holds it row by row.
template <int N, int S, typename T>
__device__ __forceinline__ void mma_row(float (&c)[N / 8][4], const uint32_t (&a)[4], const T* tile,
                                        int k, int lane) {
  for (int n = 0; n < N / 8; n += 2) {
    uint32_t b[4];
    load_b<S>(b, tile, k, n * 8, lane);
    mma<T>(c[n], a, b[0], b[1]);
    mma<T>(c[n + 1], a, b[2], b[3]);
  }
}

// c[n] += A B for every 8-column block n of a 16 x N product whose B is the transpose of N rows
// of a tile (K or Q, dO as right factors of Q K^T, K Q^T, V dO^T), columns [k, k + 16) of them.
template <int N, int S, typename T>
__device__ __forceinline__ void mma_row_of_rows(float (&c)[N / 8][4], const uint32_t (&a)[4],
                                                const T* tile, int k, int lane) {
  for (int n = 0; n < N / 8; n += 2) {
    uint32_t b[4];
    load_b_of_rows<S>(b, tile, n * 8, k, lane);
    mma<T>(c[n], a, b[0], b[1]);
    mma<T>(c[n + 1], a, b[2], b[3]);
  }
}

// Two floats as one register of two T.
template <typename T>
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// The A operand made of accumulator blocks 2 kk and 2 kk + 1 (16 rows x 16 columns).
template <typename T, int N>
__device__ __forceinline__ void accumulators_as_a(uint32_t (&a)[4], const float (&c)[N][4],
                                                  int kk) {
  a[0] = pack<T>(c[2 * kk][0], c[2 * kk][1]);
  a[1] = pack<T>(c[2 * kk][2], c[2 * kk][3]);
  a[2] = pack<T>(c[2 * kk + 1][0], c[2 * kk + 1][1]);
  a[3] = pack<T>(c[2 * kk + 1][2], c[2 * kk + 1][3]);
}

// f.template operator()<T, D>() for the 16-bit type and the head dim (64, 80, 96 or 128; the
// list fast::attention_gpu_kernel_applies accepts) the kernels take.
template <typename F>
void dispatch(Dtype dtype, int head_dim, F&& f) {
  auto by_dim = [&]<typename T>() {
    switch (head_dim) {
      case 64:
        return f.template operator()<T, 64>();
      case 80:
        return f.template operator()<T, 80>();
      case 96:
        return f.template operator()<T, 96>();
      default:
        return f.template operator()<T, 128>();
    }
  };
  if (dtype == float16) {
    by_dim.template operator()<__half>();
  } else {
    by_dim.template operator()<__nv_bfloat16>();
  }
}

}  // namespace mlx::core::cu::flash
