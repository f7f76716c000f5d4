#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// Fills the output with its single input value (already of the output dtype).
class Full : public UnaryPrimitive {
 public:
  explicit Full(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Full)
  const char* name() const override { return "Full"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const Full*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  MLX_DECLARE_TRANSFORM_RULES
};

class Arange : public UnaryPrimitive {
 public:
  Arange(Stream stream, double start, double stop, double step)
      : UnaryPrimitive(stream), start_(start), stop_(stop), step_(step) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Arange, start_, stop_, step_)
  const char* name() const override { return "Arange"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Arange*>(&other);
    return o && o->start_ == start_ && o->stop_ == stop_ && o->step_ == step_;
  }

 private:
  double start_, stop_, step_;
};

}  // namespace mlx::core
