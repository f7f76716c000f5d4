// The float32 convolution for AVX-512 CPUs: an implicit GEMM that reads the image itself where
// an im2col matrix would be (no such matrix is built). Output pixels are the GEMM's rows; each
// one reads, per run of kernel taps, a contiguous run of the channels-last image.
#pragma once

#include "mlx/backend/common/conv_geometry.h"

namespace mlx::core::cpu {

// Whether own_conv takes this convolution: the CPU has AVX-512 and the runs of contiguous
// input and the output channels per group are long enough for the register tiles.
bool use_own_conv(const ConvGeometry& g);

// out (N * X, O) = the convolution of in (N, S, C) with wt (O, K, Cg), all row-contiguous.
void own_conv(const ConvGeometry& g, const float* in, const float* wt, float* out);

}  // namespace mlx::core::cpu
