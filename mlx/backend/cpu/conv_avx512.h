// The convolution for AVX-512 CPUs: an implicit GEMM that reads the image itself where an
// im2col matrix would be (no such matrix is built). Output pixels are the GEMM's rows; each one
// reads, per run of kernel taps, a contiguous run of the channels-last image. float32 operands
// take FMAs; bfloat16 operands, on CPUs with AVX512-BF16, take vdpbf16ps on pairs of channels
// with float32 sums (no float32 copy of the image or the weights).
#pragma once

#include "mlx/backend/common/conv_geometry.h"
#include "mlx/types/half_types.h"

namespace mlx::core::cpu {

// Whether own_conv takes this float32 convolution: the CPU has AVX-512 and the runs of
// contiguous input and the output channels per group are long enough for the register tiles.
bool use_own_conv(const ConvGeometry& g);

// Likewise for bfloat16 operands: the CPU has AVX512-BF16 (and MLX_CPU_GEMM is not blas), and
// every run of the image splits into whole pairs of values.
bool use_own_conv_bf16(const ConvGeometry& g);

// out (N * X, O) = the convolution of in (N, S, C) with wt (O, K, Cg), all row-contiguous; a
// bfloat16 output is rounded once from float32 sums.
void own_conv(const ConvGeometry& g, const float* in, const float* wt, float* out);
void own_conv(const ConvGeometry& g, const bfloat16_t* in, const bfloat16_t* wt, bfloat16_t* out);

}  // namespace mlx::core::cpu
