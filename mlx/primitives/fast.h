// Fused primitives behind mlx::core::fast. The op layer validates and casts the inputs to the
// output dtype; kernels compute float16/bfloat16 in float32 and read any layout.
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core::fast {

// The dtype the fused primitives accumulate floating inputs of dtype t in (and keep their
// statistics and scalars in): float64 for float64, float32 otherwise.
inline Dtype accumulation_dtype(Dtype t) { return t == float64 ? float64 : float32; }

// Inputs {x, weight?}.
class RMSNorm : public UnaryPrimitive {
 public:
  RMSNorm(Stream stream, float eps, bool has_weight)
      : UnaryPrimitive(stream), eps_(eps), has_weight_(has_weight) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(RMSNorm, eps_, has_weight_)
  const char* name() const override { return "RMSNorm"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  float eps_;
  bool has_weight_;
};

// Inputs {x, weight?, bias?}.
class LayerNorm : public UnaryPrimitive {
 public:
  LayerNorm(Stream stream, float eps, bool has_weight, bool has_bias)
      : UnaryPrimitive(stream), eps_(eps), has_weight_(has_weight), has_bias_(has_bias) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(LayerNorm, eps_, has_weight_, has_bias_)
  const char* name() const override { return "LayerNorm"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  float eps_;
  bool has_weight_;
  bool has_bias_;
};

// Inputs {x, offset (int32, scalar or (B,)), freqs? (float32, (dims / 2,))}. `inverse` rotates
// by minus the angles (the transpose of the rotation, used by the vjp).
class RoPE : public UnaryPrimitive {
 public:
  RoPE(Stream stream, int dims, bool traditional, float base, float scale, bool has_freqs,
       bool inverse = false)
      : UnaryPrimitive(stream),
        dims_(dims),
        traditional_(traditional),
        base_(base),
        scale_(scale),
        has_freqs_(has_freqs),
        inverse_(inverse) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(RoPE, dims_, traditional_, base_, scale_, has_freqs_, inverse_)
  const char* name() const override { return "RoPE"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  // This rotation (or its inverse) of x, with the offset and frequencies of `inputs`.
  array rotate(const array& x, const std::vector<array>& inputs, bool inverse);

  int dims_;
  bool traditional_;
  float base_;
  float scale_;
  bool has_freqs_;
  bool inverse_;
};

// Inputs {q, k, v, mask?, sinks?}; a mask is bool (keep) or additive in the output dtype and
// broadcast to (B, N_q, T_q, T_kv). Outputs {out} or, with `output_lse`, {out, lse}: lse is
// float32 (B, N_q, T_q), each query row's natural-log log-sum-exp of its softmax's logits (scale
// * q k^T over the keys the row sees, plus the additive mask, and the sink's logit when there are
// sinks): -inf for a row that sees no key and has no sink. The op asks for it where a transform
// traces the forward on the GPU (fast.h, detail::AttentionLse), so that the backward
// (ScaledDotProductAttentionVJP) reads the row statistics instead of recomputing them with
// another forward pass.
class ScaledDotProductAttention : public Primitive {
 public:
  ScaledDotProductAttention(Stream stream, float scale, bool causal, bool has_mask, bool has_sinks,
                            bool output_lse = false)
      : Primitive(stream),
        scale_(scale),
        causal_(causal),
        has_mask_(has_mask),
        has_sinks_(has_sinks),
        output_lse_(output_lse) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(ScaledDotProductAttention, scale_, causal_, has_mask_, has_sinks_,
                   MLX_TRAILING(output_lse_))
  const char* name() const override { return "ScaledDotProductAttention"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool output_lse() const { return output_lse_; }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  float scale_;
  bool causal_;
  bool has_mask_;
  bool has_sinks_;
  bool output_lse_;
};

// Backward passes of the norms. RMSNormVJP: inputs {x, weight?, cotangent}, outputs
// {dx, dweight?}. LayerNormVJP: inputs {x, weight?, cotangent}, outputs {dx, dweight?, dbias?}.
// Each row's statistics are recomputed; the weight and bias gradients are summed per thread.
class RMSNormVJP : public Primitive {
 public:
  RMSNormVJP(Stream stream, float eps, bool has_weight)
      : Primitive(stream), eps_(eps), has_weight_(has_weight) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(RMSNormVJP, eps_, has_weight_)
  const char* name() const override { return "RMSNormVJP"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  MLX_DECLARE_TRANSFORM_RULES
 private:
  float eps_;
  bool has_weight_;
};

class LayerNormVJP : public Primitive {
 public:
  LayerNormVJP(Stream stream, float eps, bool has_weight, bool has_bias)
      : Primitive(stream), eps_(eps), has_weight_(has_weight), has_bias_(has_bias) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(LayerNormVJP, eps_, has_weight_, has_bias_)
  const char* name() const override { return "LayerNormVJP"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  MLX_DECLARE_TRANSFORM_RULES
 private:
  float eps_;
  bool has_weight_;
  bool has_bias_;
};

// Fused attention backward. Inputs {q, k, v, mask?, sinks?, out, d_out, lse?} (the forward's
// inputs, output and the output's cotangent, and with `has_lse` the forward's lse output);
// outputs {dq, dk, dv, dsinks?}. Masks get no gradient. The GPU's fused backward reads the
// row statistics from lse where it is given and recomputes them with a forward pass where not;
// the CPU kernel always forms them from the score rows it holds (see fast_sdpa_vjp.cpp).
class ScaledDotProductAttentionVJP : public Primitive {
 public:
  ScaledDotProductAttentionVJP(Stream stream, float scale, bool causal, bool has_mask,
                               bool has_sinks, bool has_lse = false)
      : Primitive(stream),
        scale_(scale),
        causal_(causal),
        has_mask_(has_mask),
        has_sinks_(has_sinks),
        has_lse_(has_lse) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(ScaledDotProductAttentionVJP, scale_, causal_, has_mask_, has_sinks_,
                   MLX_TRAILING(has_lse_))
  const char* name() const override { return "ScaledDotProductAttentionVJP"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool has_lse() const { return has_lse_; }
  // The index of `out` among the inputs (d_out follows it, then lse).
  int out_index() const { return 3 + has_mask_ + has_sinks_; }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  float scale_;
  bool causal_;
  bool has_mask_;
  bool has_sinks_;
  bool has_lse_;
};

// Cross entropy with class indices. Inputs {logits (..., C), targets (...) of any integer
// dtype}; outputs {loss (...) float32, lse (...)}: lse = logsumexp(logits, -1), kept in the
// accumulation type (float64 for float64 logits, float32 otherwise) for the backward. A
// target outside [0, C) gives a NaN loss (checking it would need the targets on the host).
class CrossEntropy : public Primitive {
 public:
  explicit CrossEntropy(Stream stream) : Primitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(CrossEntropy)
  const char* name() const override { return "CrossEntropy"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[1].shape(), inputs[1].shape()};
  }

  MLX_DECLARE_TRANSFORM_RULES
};

// Its backward: inputs {logits, targets, lse, cotangent (lse's dtype and shape)}, output
// dlogits = (exp(logits - lse) - one_hot(targets)) * cotangent in the logits' dtype (rows
// with an out-of-range target are NaN).
class CrossEntropyVJP : public UnaryPrimitive {
 public:
  explicit CrossEntropyVJP(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(CrossEntropyVJP)
  const char* name() const override { return "CrossEntropyVJP"; }
  bool is_equivalent(const Primitive& other) const override;
  // Whether `dlogits` may take over the buffer of `logits` (dying here, row-contiguous): the
  // kernels read each logit before writing its gradient.
  static bool can_write_over(const array& logits, const array& dlogits) {
    return logits.is_donatable() && logits.flags().row_contiguous &&
           logits.dtype() == dlogits.dtype();
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

  MLX_DECLARE_TRANSFORM_RULES
};

// One Adam / AdamW step of a bucket of n parameters of one floating dtype, fused. Inputs
// {p_1..p_n, g_1..g_n, m_1..m_n, v_1..v_n} (g_i, m_i, v_i shaped like p_i) and {lr, c1, c2}
// (scalars in float32, float64 for float64 parameters: the learning rate and the bias
// corrections 1 - beta^step, 1 when off); outputs {p'_1..p'_n, m'_1..m'_n, v'_1..v'_n}:
//   m' = b1 m + (1 - b1) g,  v' = b2 v + (1 - b2) g^2,
//   p' = p (1 - lr wd) - lr (m' / c1) / (sqrt(v' / c2) + eps).
// Kernels compute in float32 (double for float64) and round once per output. A model's whole
// update is one step: the host schedules one primitive instead of one per parameter.
class AdamUpdate : public Primitive {
 public:
  AdamUpdate(Stream stream, double beta1, double beta2, double eps, double weight_decay)
      : Primitive(stream), beta1_(beta1), beta2_(beta2), eps_(eps), weight_decay_(weight_decay) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(AdamUpdate, beta1_, beta2_, eps_, weight_decay_)
  const char* name() const override { return "AdamUpdate"; }
  bool is_equivalent(const Primitive& other) const override;
  // p'_i, m'_i and v'_i take over the buffers of p_i, m_i and v_i (the kernels read an
  // element's four values before writing its three).
  bool donates_across_outputs() const override { return true; }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  // The number of parameters, n, of a step with these inputs.
  static size_t parameters(const std::vector<array>& inputs) { return (inputs.size() - 3) / 4; }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  // Double, so that 1 - beta rounds once, in the kernel's type.
  double beta1_;
  double beta2_;
  double eps_;
  double weight_decay_;
};

// One SGD step of a bucket of n parameters of one floating dtype, fused. Inputs {p_1..p_n,
// g_1..g_n}, then {v_1..v_n} when momentum > 0 (g_i, v_i shaped like p_i), then the learning
// rate (a scalar in float32, float64 for float64 parameters); outputs {p'_1..p'_n}, then
// {v'_1..v'_n} with momentum:
//   g~ = g + wd p,  v' = momentum v + (1 - dampening) g~,
//   p' = p - lr u,  u = g~ without momentum, g~ + momentum v' with Nesterov, else v'.
// Kernels compute in float32 (double for float64) and round once per output.
class SgdUpdate : public Primitive {
 public:
  SgdUpdate(Stream stream, double momentum, double dampening, double weight_decay, bool nesterov)
      : Primitive(stream),
        momentum_(momentum),
        dampening_(dampening),
        weight_decay_(weight_decay),
        nesterov_(nesterov) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(SgdUpdate, momentum_, dampening_, weight_decay_, nesterov_)
  const char* name() const override { return "SgdUpdate"; }
  bool is_equivalent(const Primitive& other) const override;
  // p'_i and v'_i take over the buffers of p_i and v_i (read before written, per element).
  bool donates_across_outputs() const override { return true; }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool has_momentum() const { return momentum_ > 0; }
  // Arrays per parameter among the inputs (p, g and, with momentum, v) and the outputs.
  size_t inputs_per_parameter() const { return has_momentum() ? 3 : 2; }
  size_t outputs_per_parameter() const { return has_momentum() ? 2 : 1; }
  size_t parameters(const std::vector<array>& inputs) const {
    return (inputs.size() - 1) / inputs_per_parameter();
  }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  double momentum_;
  double dampening_;
  double weight_decay_;
  bool nesterov_;
};

// Both outputs of CrossEntropy, and CrossEntropyVJP's output (the cotangent cast to lse's dtype),
// without the op's argument checks (fast.cpp).
std::vector<array> cross_entropy_parts(const array& logits, const array& targets, Stream s);
array cross_entropy_vjp(const array& logits, const array& targets, const array& lse,
                        const array& cotangent, Stream s);

// Whether the GPU's fused attention kernels (backend/cuda/attention.cpp) take these inputs:
// float16 / bfloat16, head dim == value dim in {64, 80, 96, 128}, with or without a mask
// array, no sinks, and MLX_SDPA_FUSED not 0. Elsewhere the GPU runs the composite below.
bool attention_gpu_kernel_applies(Dtype dtype, int head_dim, int value_dim, bool has_sinks);
// The fused primitive on inputs {q, k, v, mask?, sinks?} as the op checks and casts them:
// its outputs, {out} or, with `output_lse`, {out, lse}.
std::vector<array> attention_fused(std::vector<array> inputs, float scale, bool causal,
                                   bool has_mask, bool has_sinks, bool output_lse, Stream s);
// Attention of inputs {q, k, v, mask?, sinks?} as a composite of ops (matmul, softmax, where):
// what the rules differentiate in forward mode, and the GPU's path where its fused kernel does
// not apply. {out} or, with `with_lse`, {out, lse} (ScaledDotProductAttention's outputs).
std::vector<array> attention_composite(const std::vector<array>& inputs, float scale, bool causal,
                                       bool has_mask, bool has_sinks, bool with_lse, Stream s);
// ScaledDotProductAttentionVJP's outputs as such a composite, from the same inputs (an lse
// input is not read: the probabilities are recomputed from q and k).
std::vector<array> attention_vjp_composite(const std::vector<array>& inputs, float scale,
                                           bool causal, bool has_mask, bool has_sinks, Stream s);

}  // namespace mlx::core::fast
