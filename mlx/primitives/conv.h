// Convolution: one primitive for every convolution and transposed convolution. Channels
// last: input (N, spatial..., C), weight (O, kernel..., C / groups), output
// (N, out spatial..., O). The op layer validates and casts both operands to the output dtype.
#pragma once

#include <vector>

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// Geometry of a convolution along its spatial dimensions (one entry per dimension). The
// input is dilated (input_dilation - 1 zeros between elements), padded by padding_lo /
// padding_hi (negative padding crops), then correlated with the kernel dilated by
// kernel_dilation, taking every stride-th window; `flip` correlates with the kernel reversed
// along every spatial dimension (a true convolution).
struct ConvParams {
  std::vector<int> stride;
  std::vector<int> padding_lo;
  std::vector<int> padding_hi;
  std::vector<int> kernel_dilation;
  std::vector<int> input_dilation;
  int groups = 1;
  bool flip = false;

  bool operator==(const ConvParams&) const = default;
};

// Output spatial size along dimension i for input size `in` and kernel size `k` (0 when the
// dilated kernel does not fit the padded input; the op layer rejects that).
int64_t conv_out_size(const ConvParams& p, int i, int64_t in, int64_t k);

// (N, out spatial..., O) for the given input and weight shapes.
Shape conv_output_shape(const ConvParams& p, const Shape& in, const Shape& weight);

// The weight's shape (O, kernel..., C / groups) for an input (N, spatial..., C) and a
// cotangent (N, out spatial..., O).
Shape conv_weight_grad_shape(const ConvParams& p, const Shape& kernel, const Shape& in,
                             const Shape& cotangent);

namespace serial {
template <>
struct Codec<ConvParams> {
  static void put(StateWriter& w, const ConvParams& p) {
    for (auto* v :
         {&p.stride, &p.padding_lo, &p.padding_hi, &p.kernel_dilation, &p.input_dilation}) {
      Codec<std::vector<int>>::put(w, *v);
    }
    Codec<int>::put(w, p.groups);
    Codec<bool>::put(w, p.flip);
  }
  static ConvParams get(StateReader& r) {
    ConvParams p;
    for (auto* v :
         {&p.stride, &p.padding_lo, &p.padding_hi, &p.kernel_dilation, &p.input_dilation}) {
      *v = Codec<std::vector<int>>::get(r);
    }
    p.groups = Codec<int>::get(r);
    p.flip = Codec<bool>::get(r);
    return p;
  }
};
}  // namespace serial

class Convolution : public UnaryPrimitive {
 public:
  Convolution(Stream stream, ConvParams params)
      : UnaryPrimitive(stream), params_(std::move(params)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Convolution, params_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Convolution"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Convolution*>(&other);
    return o && o->params_ == params_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {conv_output_shape(params_, inputs[0].shape(), inputs[1].shape())};
  }
  const ConvParams& params() const { return params_; }

 private:
  ConvParams params_;
};

// The weight derivative of a Convolution with these parameters (no input dilation; the rules
// build it for every convolution on GPU streams and for depthwise ones on CPU streams): inputs
// are that convolution's input (N, spatial..., C) and its output's cotangent
// (N, out spatial..., O); the output, shaped as the weight (O, kernel..., C / groups), sums per
// output channel, tap and group channel the input times the cotangent over the batch and
// every output pixel. As a convolution of transposed copies (the batch as channels) it has a
// few large taps and parallelizes poorly; as its own primitive the GPU hands it to cuDNN's
// backward-filter pass, and depthwise geometries take direct kernels on both backends.
class ConvWeightGrad : public UnaryPrimitive {
 public:
  ConvWeightGrad(Stream stream, ConvParams params, Shape kernel)
      : UnaryPrimitive(stream), params_(std::move(params)), kernel_(std::move(kernel)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(ConvWeightGrad, params_, kernel_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "ConvWeightGrad"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const ConvWeightGrad*>(&other);
    return o && o->params_ == params_ && o->kernel_ == kernel_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {conv_weight_grad_shape(params_, kernel_, inputs[0].shape(), inputs[1].shape())};
  }
  const ConvParams& params() const { return params_; }
  const Shape& kernel() const { return kernel_; }

 private:
  ConvParams params_;
  Shape kernel_;  // the kernel's spatial shape
};

}  // namespace mlx::core
