// Depthwise convolutions on the CPU (one input and one output channel per group: groups ==
// C_in == C_out), channels last: direct float32 kernels vectorized over the contiguous
// channels. The convolution kernel also runs its input derivative (a depthwise convolution of
// the cotangent with the flipped kernel, the forward stride as input dilation); the weight
// derivative has its own kernel (a per-channel sum over every pixel, no transposed copies).
#pragma once

#include "mlx/backend/common/conv_geometry.h"

namespace mlx::core::cpu {

inline bool is_depthwise(const ConvGeometry& g) { return g.Cg == 1 && g.Og == 1; }

// out (N, X, C) = the depthwise convolution of in (N, S, C) with wt (C, K), row-contiguous.
void depthwise_conv(const ConvGeometry& g, const float* in, const float* wt, float* out);

// dw (C, K) = the derivative of sum(cot * conv(in, w)) with respect to w, for in (N, S, C) and
// cot (N, X, C): dw[c, k] = sum over images and output pixels x of cot[x, c] times the input
// that x reads through tap k.
void depthwise_weight_grad(const ConvGeometry& g, const float* in, const float* cot, float* dw);

}  // namespace mlx::core::cpu
