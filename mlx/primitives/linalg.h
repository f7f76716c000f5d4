// Matrix product primitives. Inputs arrive broadcast to the output's batch shape, in the
// output dtype; the CPU kernels read them through their strides.
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// out = a @ b for a: (..., M, K), b: (..., K, N).
class Matmul : public UnaryPrimitive {
 public:
  explicit Matmul(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Matmul)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Matmul"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const Matmul*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

// out = alpha * (a @ b) + beta * c with inputs {c, a, b}; c has the output's rank and either
// its shape or, for a row of biases, the shape (1, ..., 1, N).
class AddMM : public UnaryPrimitive {
 public:
  AddMM(Stream stream, float alpha, float beta)
      : UnaryPrimitive(stream), alpha_(alpha), beta_(beta) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(AddMM, alpha_, beta_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "AddMM"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  float alpha() const { return alpha_; }
  float beta() const { return beta_; }

 private:
  float alpha_;
  float beta_;
};

// Outputs {l @ r, r summed over its rows (1, N)} for l: (M, K), r: (K, N). With r the
// cotangent of a Linear layer's output these are its weight and bias gradients, which the GPU
// computes in one pass over r (cuBLASLt's bias-gradient epilogue).
class MatmulColumnSums : public Primitive {
 public:
  explicit MatmulColumnSums(Stream stream) : Primitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(MatmulColumnSums)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "MatmulColumnSums"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const MatmulColumnSums*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

}  // namespace mlx::core
