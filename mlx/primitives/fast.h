// Fused primitives behind mlx::core::fast. The op layer validates and casts the inputs to the
// output dtype; kernels compute float16/bfloat16 in float32 and read any layout.
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core::fast {

// Inputs {x, weight?}.
class RMSNorm : public UnaryPrimitive {
 public:
  RMSNorm(Stream stream, float eps, bool has_weight)
      : UnaryPrimitive(stream), eps_(eps), has_weight_(has_weight) {}
  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  const char* name() const override { return "RMSNorm"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

 private:
  float eps_;
  bool has_weight_;
};

// Inputs {x, weight?, bias?}.
class LayerNorm : public UnaryPrimitive {
 public:
  LayerNorm(Stream stream, float eps, bool has_weight, bool has_bias)
      : UnaryPrimitive(stream), eps_(eps), has_weight_(has_weight), has_bias_(has_bias) {}
  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  const char* name() const override { return "LayerNorm"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

 private:
  float eps_;
  bool has_weight_;
  bool has_bias_;
};

// Inputs {x, offset (int32, scalar or (B,)), freqs? (float32, (dims / 2,))}.
class RoPE : public UnaryPrimitive {
 public:
  RoPE(Stream stream, int dims, bool traditional, float base, float scale, bool has_freqs)
      : UnaryPrimitive(stream),
        dims_(dims),
        traditional_(traditional),
        base_(base),
        scale_(scale),
        has_freqs_(has_freqs) {}
  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  const char* name() const override { return "RoPE"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

 private:
  int dims_;
  bool traditional_;
  float base_;
  float scale_;
  bool has_freqs_;
};

// Inputs {q, k, v, mask?, sinks?}; a mask is bool (keep) or additive in the output dtype and
// broadcast to (B, N_q, T_q, T_kv).
class ScaledDotProductAttention : public UnaryPrimitive {
 public:
  ScaledDotProductAttention(Stream stream, float scale, bool causal, bool has_mask, bool has_sinks)
      : UnaryPrimitive(stream),
        scale_(scale),
        causal_(causal),
        has_mask_(has_mask),
        has_sinks_(has_sinks) {}
  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  const char* name() const override { return "ScaledDotProductAttention"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

 private:
  float scale_;
  bool causal_;
  bool has_mask_;
  bool has_sinks_;
};

}  // namespace mlx::core::fast
