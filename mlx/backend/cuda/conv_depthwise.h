// Depthwise convolutions on the GPU, channels last (conv_depthwise.cu): their own kernels, which
// conv.cu runs before cuDNN (whose grouped NHWC kernels are slow for them).
#pragma once

#include "mlx/array.h"
#include "mlx/backend/common/conv_geometry.h"

namespace mlx::core::cu {

// Whether depthwise_conv computes this convolution (any stride, padding, kernel or input
// dilation, flip, 1 to 3 spatial dimensions, every floating type): groups of one input channel
// and at most 4 output channels (a depthwise convolution with channel multiplier 1 to 4), or of
// one output channel and at most 4 input channels (the transposed form, which is such a
// convolution's input derivative: the cotangent's groups of `multiplier` channels summed into
// each input channel). Kernels of more than 1024 taps only over at least 2^20 outputs (pixels x
// groups): a long kernel over few outputs is left to products that split its sums. Positions
// along each dimension must fit in 32 bits.
bool depthwise_conv_supported(const ConvGeometry& g);
// out (N, out spatial..., O) = the convolution of in (N, spatial..., C) with wt (O, kernel...,
// C / groups); every operand dense (row-contiguous), out allocated.
void depthwise_conv(const ConvGeometry& g, const array& in, const array& wt, array& out);

// Whether depthwise_weight_grad computes this weight derivative (g is the convolution's
// geometry, the weight as out): groups of one input channel and at most 4 output channels
// (positions in 32 bits).
bool depthwise_weight_grad_supported(const ConvGeometry& g);
// dw (O, kernel..., 1) = the sum over the batch and output pixels of the input pixel each tap
// reads times the cotangent cot (N, out spatial..., O), in float32 (float64 for float64);
// operands dense, dw allocated.
void depthwise_weight_grad(const ConvGeometry& g, const array& in, const array& cot, array& dw);

}  // namespace mlx::core::cu
