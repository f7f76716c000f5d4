// Products with an affine-quantized matrix (MLX's packed layout, see ops/quantized.h).
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// Inputs {x (..., K), w, scales, biases}, all but w in the output dtype; out = x @ W.T for W
// (N, K) quantized along K (transpose), else x @ W for W (K, N) quantized along N. x is
// row-contiguous with its batch flattened: (M, K).
class QuantizedMatmul : public UnaryPrimitive {
 public:
  QuantizedMatmul(Stream stream, int group_size, int bits, bool transpose)
      : UnaryPrimitive(stream), group_size_(group_size), bits_(bits), transpose_(transpose) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(QuantizedMatmul, group_size_, bits_, transpose_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "QuantizedMatmul"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const QuantizedMatmul*>(&other);
    return o && o->group_size_ == group_size_ && o->bits_ == bits_ && o->transpose_ == transpose_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  int group_size() const { return group_size_; }
  int bits() const { return bits_; }
  bool transpose() const { return transpose_; }

 private:
  int group_size_;
  int bits_;
  bool transpose_;
};

}  // namespace mlx::core
