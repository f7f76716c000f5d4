// The Hadamard transform (see ops/hadamard.h).
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// out = scale * H x along the last axis (transpose: H^T x, which differs from H x for
// m = 20, 28); the input has the output's floating dtype.
class Hadamard : public UnaryPrimitive {
 public:
  Hadamard(Stream stream, double scale, bool transpose)
      : UnaryPrimitive(stream), scale_(scale), transpose_(transpose) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Hadamard, scale_, transpose_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Hadamard"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Hadamard*>(&other);
    return o && o->scale_ == scale_ && o->transpose_ == transpose_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  double scale() const { return scale_; }
  bool transpose() const { return transpose_; }

 private:
  double scale_;
  bool transpose_;
};

// A Hadamard node over the floating array x (checked by the op).
array hadamard_node(const array& x, double scale, bool transpose, Stream stream);

}  // namespace mlx::core
