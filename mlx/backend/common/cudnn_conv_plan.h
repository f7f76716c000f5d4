// How a Convolution maps onto cuDNN's legacy convolution API, computed on the host without
// cuDNN or a GPU: backend/cuda/conv.cu runs the plan, and tests/cpp/cudnn_conv_plan_test.cpp
// runs it through a CPU reference of cuDNN's documented semantics against the CPU's
// conv_general, so the mapping is tested on machines without a GPU.
//
// cuDNN pads symmetrically, has no input dilation in its forward convolution, and its
// operands are packed channels-last (NHWC / NDHWC) tensors here. The mappings:
// - No input dilation: cudnnConvolutionForward. Per spatial dimension, negative low padding
//   crops the input (a dense copy of the cropped region), the symmetric pad is the low padding
//   (0 when negative) plus m strides, where m is the smallest count that gives the high side
//   enough padding, and the output is the window [m, m + out) of cuDNN's output (a temporary
//   when it is larger than ours). flip selects CUDNN_CONVOLUTION, else CROSS_CORRELATION.
// - Input dilation (transposed convolutions), stride 1: cudnnConvolutionBackwardData, whose
//   dy is our input and dx our output: its stride is the input dilation, its filter our weight
//   transposed per group to (C, kernel..., O / groups), flip selects CROSS_CORRELATION, else
//   CONVOLUTION (the adjoint of a correlation runs the kernel reversed). Its pad is
//   (k - 1) kernel_dilation - padding_lo where conv_transpose's geometry lets dx be our output
//   (padding_lo <= the dilated kernel, 0 <= padding_hi - padding_lo < input dilation);
//   elsewhere a smaller pad, and our output is a window of a temporary dx, zero where dx does
//   not reach (no term lands there).
// - Anything else (float64, other dtypes, input dilation with a stride above 1, sizes past
//   32-bit indices, empty operands, negative padding cropping the whole input) falls back,
//   with the reason.
// 1-D convolutions are 2-D ones with a leading unit dimension.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/primitives/conv.h"

namespace mlx::core {

struct CudnnConvPlan {
  enum class Op { fallback, forward, backward_data };
  Op op = Op::fallback;
  std::string reason;  // why it falls back

  // CUDNN_CONVOLUTION (the filter reversed along every spatial dimension) rather than
  // CUDNN_CROSS_CORRELATION.
  bool convolution_mode = false;
  int groups = 1;
  // cuDNN's dimensions, in its order (N, C, spatial...): 4 or 5 entries, every tensor packed
  // channels-last. x is cuDNN's x (forward) or dy (backward data): our input, cropped. w is
  // the filter (K, C per group, spatial...): our weight (forward) or its per-group transpose
  // (backward data). y is cuDNN's y (forward) or dx (backward data).
  std::vector<int> x_dims, w_dims, y_dims;
  std::vector<int> out_dims;  // our output, in cuDNN's order
  // Per cuDNN spatial dimension: the symmetric pad, stride and dilation.
  std::vector<int> pad, stride, dilation;
  // Per cuDNN spatial dimension: input elements dropped at the start (negative padding), and
  // where our output starts in y: our output index j is y's j + keep (zero outside y).
  std::vector<int> crop, keep;
  // The filter is our weight (G * Og, kernel..., Cg) transposed to (G * Cg, kernel..., Og)
  // (backward data, where the transpose moves elements: our weight is the filter where at most
  // one of Og, Cg and the kernel's taps is above 1).
  bool transpose_weight = false;

  bool crops_input() const;
  // Whether y differs from our output (then cuDNN writes a temporary and the window is copied).
  bool temp_output() const;
  // Along cuDNN spatial dimension c, the range [begin, end) of our output inside y.
  int window_begin(int c) const;
  int window_end(int c) const;
  // Whether part of our output lies outside y (and is zero).
  bool zero_fill() const;
};

// The plan for a convolution with these parameters, input (N, spatial..., C), weight
// (O, kernel..., C / groups) and output (N, out spatial..., O) shapes and element type.
CudnnConvPlan plan_cudnn_conv(const ConvParams& p, const Shape& in, const Shape& wt,
                              const Shape& out, Dtype dtype);

// cuDNN's output size along a spatial dimension (cudnnGetConvolutionNdForwardOutputDim):
// 1 + (in + 2 pad - ((k - 1) dilation + 1)) / stride.
int64_t cudnn_conv_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation);

// Strides of a packed channels-last tensor given cuDNN's dimensions (N, C, spatial...), in
// cuDNN's order.
std::vector<int64_t> cudnn_nhwc_strides(const std::vector<int>& dims);

}  // namespace mlx::core
