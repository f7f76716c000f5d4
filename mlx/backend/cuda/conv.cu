// Convolution::eval_gpu, channels last (primitives/conv.h). The general scheme is im2col over a
// chunk of output pixels (one row per pixel: kernel taps x group channels, zeros for taps in
// the padding or between dilated input elements) followed by one cuBLASLt product per group
// with the group's weights. Depthwise-like convolutions (one output channel per group, few
// channels per group) run a direct kernel instead of per-group products of one column.
// DepthwiseWeightGrad (a depthwise convolution's weight derivative) sums per channel and tap.
#include <algorithm>

#include "mlx/backend/common/conv_geometry.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/gemm.h"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/occupancy.cuh"
#include "mlx/primitives/conv.h"

namespace mlx::core {

namespace {

using namespace cu;

// The input pixel (within its image) that output pixel `x` reads through tap `tap`, or -1
// when the tap falls in the padding or between dilated input elements.
__device__ __forceinline__ int64_t input_pixel(const ConvGeometry& g, int64_t x, int64_t tap) {
  int64_t xs[3], ts[3];
  xs[2] = x % g.out[2];
  xs[1] = x / g.out[2] % g.out[1];
  xs[0] = x / (g.out[2] * g.out[1]);
  ts[2] = tap % g.k[2];
  ts[1] = tap / g.k[2] % g.k[1];
  ts[0] = tap / (g.k[2] * g.k[1]);
  int64_t pix = 0;
#pragma unroll
  for (int d = 0; d < 3; ++d) {
    const int64_t j = g.flip ? g.k[d] - 1 - ts[d] : ts[d];
    const int64_t q = xs[d] * g.stride[d] + j * g.kdil[d] - g.lo[d];
    if (q < 0 || q % g.idil[d] != 0 || q / g.idil[d] >= g.in[d]) {
      return -1;
    }
    pix = pix * g.in[d] + q / g.idil[d];
  }
  return pix;
}

// cols (rows, K Cg) for the output rows [r0, r0 + rows) of group grp.
template <typename T>
__global__ void im2col_kernel(const T* in, T* cols, ConvGeometry g, int64_t r0, int64_t rows,
                              int64_t grp) {
  const int64_t width = g.K * g.Cg, total = rows * width;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = r0 + i / width, col = i % width;
    const int64_t n = r / g.X, x = r - n * g.X, tap = col / g.Cg, c = col - tap * g.Cg;
    const int64_t pix = input_pixel(g, x, tap);
    cols[i] = pix < 0 ? T(0) : in[(n * g.S + pix) * g.C + grp * g.Cg + c];
  }
}

// out[r, grp] = sum over taps and the group's channels of w[grp, tap, c] in[pixel, grp Cg + c]
// (one output channel per group), one thread per output element, accumulated in float.
template <typename T>
__global__ void direct_kernel(const T* in, const T* wt, T* out, ConvGeometry g) {
  const int64_t total = g.N * g.X * g.G;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / g.G, grp = i - r * g.G, n = r / g.X, x = r - n * g.X;
    compute_t<T> acc = 0;
    for (int64_t tap = 0; tap < g.K; ++tap) {
      const int64_t pix = input_pixel(g, x, tap);
      if (pix < 0) {
        continue;
      }
      const T* src = in + (n * g.S + pix) * g.C + grp * g.Cg;
      const T* w = wt + (grp * g.K + tap) * g.Cg;
      for (int64_t c = 0; c < g.Cg; ++c) {
        acc += static_cast<compute_t<T>>(w[c]) * static_cast<compute_t<T>>(src[c]);
      }
    }
    out[i] = cast_to<T>(acc);
  }
}

// Up to this many channels per group, single-output groups use the direct kernel.
constexpr int64_t kDirectMaxGroupChannels = 16;
// Bytes of im2col columns per chunk of output rows.
constexpr int64_t kChunkBytes = int64_t(64) << 20;

template <typename T>
void im2col_conv(const ConvGeometry& g, const array& in, const array& wt, array& out) {
  const int64_t M = g.N * g.X, width = g.K * g.Cg;
  const int64_t chunk =
      std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(width * sizeof(T), 1), 1, M);
  const int32_t Og = static_cast<int32_t>(g.Og), W = static_cast<int32_t>(width);
  array cols({static_cast<int32_t>(chunk), W}, in.dtype(), nullptr, {});
  allocate(cols);
  // Groups write a column block of out: through a dense block when there are several.
  std::optional<array> block;
  if (g.G > 1) {
    block.emplace(Shape{static_cast<int32_t>(chunk), Og}, out.dtype(), nullptr,
                  std::vector<array>{});
    allocate(*block);
  }
  for (int64_t r0 = 0; r0 < M; r0 += chunk) {
    const int32_t rows = static_cast<int32_t>(std::min(chunk, M - r0));
    for (int64_t grp = 0; grp < g.G; ++grp) {
      im2col_kernel<T><<<blocks_for(rows * width), kThreads, 0, stream()>>>(
          in.gpu_data<T>(), cols.gpu_data<T>(), g, r0, rows, grp);
      check_launch("conv");
      array lhs = view_of(cols, {rows, W}, {width, 1});
      // The group's weights (Og, K Cg) read transposed.
      array rhs = view_of(wt, {W, Og}, {1, width}, grp * g.Og * width);
      if (g.G == 1) {
        array res = view_of(out, {rows, Og}, {Og, 1}, r0 * g.O);
        gemm(lhs, rhs, res);
      } else {
        array res = view_of(*block, {rows, Og}, {Og, 1});
        gemm(lhs, rhs, res);
        copy_strided(res, {Og, 1}, 0, out, {g.O, 1}, r0 * g.O + grp * g.Og, {rows, Og});
      }
    }
  }
}

// DepthwiseWeightGrad's sums, in two passes. Blocks of 32 channels x 8 lanes of pixels, one
// block row per kernel tap (blockIdx.y) and slice of the batch's output pixels (blockIdx.z):
// each thread folds in[pixel read by the tap, c] * cot[pixel, c] over its pixels, coalesced
// over channels, and the block writes partial[slice, tap, c]; the second pass adds the slices
// in order (no atomics: the result does not depend on scheduling).
template <typename T, typename Acc>
__global__ void depthwise_weight_partials(const T* in, const T* cot, Acc* partial, ConvGeometry g,
                                          int64_t per_slice) {
  __shared__ Acc lanes[8][33];
  const int64_t c = int64_t(blockIdx.x) * 32 + threadIdx.x, tap = blockIdx.y;
  const int64_t p0 = blockIdx.z * per_slice, p1 = min(g.N * g.X, p0 + per_slice);
  Acc acc = 0;
  if (c < g.C) {
    for (int64_t p = p0 + threadIdx.y; p < p1; p += 8) {
      const int64_t n = p / g.X, pix = input_pixel(g, p - n * g.X, tap);
      if (pix >= 0) {
        acc += static_cast<Acc>(in[(n * g.S + pix) * g.C + c]) * static_cast<Acc>(cot[p * g.C + c]);
      }
    }
  }
  lanes[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < g.C) {
    for (int y = 1; y < 8; ++y) {
      acc += lanes[y][threadIdx.x];
    }
    partial[(blockIdx.z * g.K + tap) * g.C + c] = acc;
  }
}

// dw[c, tap] = the sum of partial[slice, tap, c] over the slices.
template <typename T, typename Acc>
__global__ void depthwise_weight_sum(const Acc* partial, T* dw, ConvGeometry g, int64_t slices) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // tap * C + c
  if (i >= g.K * g.C) {
    return;
  }
  Acc v = 0;
  for (int64_t s = 0; s < slices; ++s) {
    v += partial[s * g.K * g.C + i];
  }
  const int64_t tap = i / g.C, c = i - tap * g.C;
  dw[c * g.K + tap] = cast_to<T>(v);
}

template <typename T>
void depthwise_weight_grad(const ConvGeometry& g, const array& in, const array& cot, array& dw) {
  using Acc = acc_t<T>;
  const int64_t pixels = g.N * g.X, column_blocks = (g.C + 31) / 32 * g.K;
  // Slices of pixels so that the grid fills the GPU once, each with a few hundred pixels.
  const int64_t wave = resident_blocks<depthwise_weight_partials<T, Acc>, 256>();
  const int64_t slices =
      std::clamp<int64_t>(std::min(wave / column_blocks, (pixels + 255) / 256), 1, 65535);
  const int64_t per_slice = (pixels + slices - 1) / slices;
  Scratch partial(sizeof(Acc) * slices * g.K * g.C);
  dim3 grid(static_cast<unsigned>((g.C + 31) / 32), static_cast<unsigned>(g.K),
            static_cast<unsigned>(slices));
  depthwise_weight_partials<T, Acc><<<grid, dim3(32, 8), 0, stream()>>>(
      in.gpu_data<T>(), cot.gpu_data<T>(), partial.as<Acc>(), g, per_slice);
  depthwise_weight_sum<T, Acc><<<blocks_for(g.K * g.C), kThreads, 0, stream()>>>(
      partial.as<Acc>(), dw.gpu_data<T>(), g, slices);
  check_launch("DepthwiseWeightGrad");
}

}  // namespace

void DepthwiseWeightGrad::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  array in = dense_copy(inputs[0]);
  array cot = dense_copy(inputs[1]);
  // The output has the weight's shape and the cotangent the convolution output's.
  const ConvGeometry g = conv_geometry(params_, in, out, cot);
  if (g.N * g.X == 0) {
    MLX_CUDA_CHECK(cudaMemsetAsync(out.gpu_data<char>(), 0, out.nbytes(), cu::stream()));
    return;
  }
  dispatch_float<DeviceTypes>(out.dtype(), "DepthwiseWeightGrad",
                              [&]<typename T>() { depthwise_weight_grad<T>(g, in, cot, out); });
}

void Convolution::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  array in = dense_copy(inputs[0]);
  array wt = dense_copy(inputs[1]);
  ConvGeometry g = conv_geometry(params_, in, wt, out);
  if (g.Cg == 0) {
    MLX_CUDA_CHECK(cudaMemsetAsync(out.gpu_data<char>(), 0, out.nbytes(), cu::stream()));
    return;
  }
  dispatch_float<DeviceTypes>(out.dtype(), "conv", [&]<typename T>() {
    if (g.Og == 1 && g.G > 1 && g.Cg <= kDirectMaxGroupChannels) {
      const int64_t total = g.N * g.X * g.G;
      direct_kernel<T><<<blocks_for(total), kThreads, 0, cu::stream()>>>(
          in.gpu_data<T>(), wt.gpu_data<T>(), out.gpu_data<T>(), g);
      check_launch("conv");
    } else {
      im2col_conv<T>(g, in, wt, out);
    }
  });
}

}  // namespace mlx::core
