// Matrix product primitives. Inputs arrive broadcast to the output's batch shape, in the
// output dtype (except the float32 outputs of 16-bit products below); the kernels read them
// through their strides.
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// out = a @ b for a: (..., M, K), b: (..., K, N), in the operands' dtype or, with
// `float32_out` for float16 / bfloat16 operands, accumulated and stored in float32 (never
// rounded to 16 bits). AsType's vjp makes those of the weight gradients of mixed-precision
// layers (transforms/widen_products.cpp).
class Matmul : public UnaryPrimitive {
 public:
  explicit Matmul(Stream stream, bool float32_out = false)
      : UnaryPrimitive(stream), float32_out_(float32_out) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Matmul, MLX_TRAILING(float32_out_))
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Matmul"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Matmul*>(&other);
    return o && o->float32_out_ == float32_out_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool float32_out() const { return float32_out_; }

 private:
  bool float32_out_;
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
// computes in one pass over r (cuBLASLt's bias-gradient epilogue). Bit k of `float32_outputs`
// makes output k float32 for float16 / bfloat16 operands (as Matmul's `float32_out`).
class MatmulColumnSums : public Primitive {
 public:
  explicit MatmulColumnSums(Stream stream, uint8_t float32_outputs = 0)
      : Primitive(stream), float32_outputs_(float32_outputs) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(MatmulColumnSums, MLX_TRAILING(float32_outputs_))
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "MatmulColumnSums"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const MatmulColumnSums*>(&other);
    return o && o->float32_outputs_ == float32_outputs_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  uint8_t float32_outputs() const { return float32_outputs_; }
  bool float32_output(int k) const { return (float32_outputs_ >> k) & 1; }

 private:
  uint8_t float32_outputs_;
};

// A product fused by compile's epilogue pass (transforms/matmul_epilogues.h) with the
// elementwise op after it. Its rules are those of the ops it stands for (`expand`), through
// which the transforms differentiate and vectorize it; export writes the unfused program, so
// files never hold it.
class FusedMatmul : public UnaryPrimitive {
 public:
  using UnaryPrimitive::UnaryPrimitive;
  MLX_DECLARE_TRANSFORM_RULES
  virtual std::vector<array> expand(const std::vector<array>& inputs) const = 0;
};

// out = gelu_approx(a @ b + bias) for a: (M, K), b: (K, N) and an optional bias row (1, N),
// all of one floating dtype: a Linear layer and the tanh-approximated GELU after it, where
// nothing else reads the pre-activation (inference). Inputs {a, b} or {a, b, bias}. Made by
// compile only (transforms/matmul_epilogues.h); the GPU applies the GELU in cuBLASLt's
// epilogue, so the pre-activation is never stored.
class MatmulGeluApprox : public FusedMatmul {
 public:
  explicit MatmulGeluApprox(Stream stream) : FusedMatmul(stream) {}
  MLX_DECLARE_EVAL
  const char* name() const override { return "MatmulGeluApprox"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const MatmulGeluApprox*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  std::vector<array> expand(const std::vector<array>& inputs) const override;
};

// out = gelu_approx_vjp(x, (a @ b) reshaped to x's shape) for a: (M, K), b: (K, N), x: (..., N)
// of M * N elements, all of one floating dtype: the gradient at a Linear layer's input of the
// tanh-approximated GELU that follows it. Made by compile only (transforms/matmul_epilogues.h);
// the GPU applies the GELU derivative in cuBLASLt's epilogue, so the product is never stored.
class MatmulGeluApproxVjp : public FusedMatmul {
 public:
  explicit MatmulGeluApproxVjp(Stream stream) : FusedMatmul(stream) {}
  MLX_DECLARE_EVAL
  const char* name() const override { return "MatmulGeluApproxVjp"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const MatmulGeluApproxVjp*>(&other) != nullptr;
  }
  // x's shape; throws where the product does not have x's size (a shapeless replay whose new
  // shapes the reshape it replaced would have refused).
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  std::vector<array> expand(const std::vector<array>& inputs) const override;
};

}  // namespace mlx::core
