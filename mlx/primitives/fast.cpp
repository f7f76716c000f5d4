#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

bool RMSNorm::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const RMSNorm*>(&other);
  return o && o->eps_ == eps_ && o->has_weight_ == has_weight_;
}

bool LayerNorm::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const LayerNorm*>(&other);
  return o && o->eps_ == eps_ && o->has_weight_ == has_weight_ && o->has_bias_ == has_bias_;
}

bool RoPE::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const RoPE*>(&other);
  return o && o->dims_ == dims_ && o->traditional_ == traditional_ && o->base_ == base_ &&
         o->scale_ == scale_ && o->has_freqs_ == has_freqs_ && o->inverse_ == inverse_;
}

bool ScaledDotProductAttention::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ScaledDotProductAttention*>(&other);
  return o && o->scale_ == scale_ && o->causal_ == causal_ && o->has_mask_ == has_mask_ &&
         o->has_sinks_ == has_sinks_ && o->output_lse_ == output_lse_;
}

std::vector<Shape> ScaledDotProductAttention::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  shape.back() = inputs[2].shape().back();
  if (!output_lse_) {
    return {shape};
  }
  Shape lse(shape.begin(), shape.end() - 1);
  return {shape, lse};
}

bool RMSNormVJP::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const RMSNormVJP*>(&other);
  return o && o->eps_ == eps_ && o->has_weight_ == has_weight_;
}

std::vector<Shape> RMSNormVJP::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes = {inputs[0].shape()};
  if (has_weight_) {
    shapes.push_back(inputs[1].shape());
  }
  return shapes;
}

bool LayerNormVJP::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const LayerNormVJP*>(&other);
  return o && o->eps_ == eps_ && o->has_weight_ == has_weight_ && o->has_bias_ == has_bias_;
}

std::vector<Shape> LayerNormVJP::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes = {inputs[0].shape()};
  for (bool p : {has_weight_, has_bias_}) {
    if (p) {
      shapes.push_back({inputs[0].shape(-1)});
    }
  }
  return shapes;
}

bool ScaledDotProductAttentionVJP::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ScaledDotProductAttentionVJP*>(&other);
  return o && o->scale_ == scale_ && o->causal_ == causal_ && o->has_mask_ == has_mask_ &&
         o->has_sinks_ == has_sinks_ && o->has_lse_ == has_lse_;
}

std::vector<Shape> ScaledDotProductAttentionVJP::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes = {inputs[0].shape(), inputs[1].shape(), inputs[2].shape()};
  if (has_sinks_) {
    shapes.push_back(inputs[3 + has_mask_].shape());
  }
  return shapes;
}

bool CrossEntropy::is_equivalent(const Primitive& other) const {
  return dynamic_cast<const CrossEntropy*>(&other) != nullptr;
}

bool CrossEntropyVJP::is_equivalent(const Primitive& other) const {
  return dynamic_cast<const CrossEntropyVJP*>(&other) != nullptr;
}

namespace {

// A bucketed optimizer step's outputs: `kinds` groups (new parameters, new state...), each
// shaped like the n parameters that open its inputs.
std::vector<Shape> bucket_shapes(const std::vector<array>& inputs, size_t n, size_t kinds) {
  std::vector<Shape> shapes;
  shapes.reserve(kinds * n);
  for (size_t kind = 0; kind < kinds; ++kind) {
    for (size_t i = 0; i < n; ++i) {
      shapes.push_back(inputs[i].shape());
    }
  }
  return shapes;
}

}  // namespace

std::vector<Shape> AdamUpdate::output_shapes(const std::vector<array>& inputs) {
  return bucket_shapes(inputs, parameters(inputs), 3);
}

std::vector<Shape> SgdUpdate::output_shapes(const std::vector<array>& inputs) {
  return bucket_shapes(inputs, parameters(inputs), outputs_per_parameter());
}

bool SgdUpdate::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const SgdUpdate*>(&other);
  return o && o->momentum_ == momentum_ && o->dampening_ == dampening_ &&
         o->weight_decay_ == weight_decay_ && o->nesterov_ == nesterov_;
}

bool AdamUpdate::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const AdamUpdate*>(&other);
  return o && o->beta1_ == beta1_ && o->beta2_ == beta2_ && o->eps_ == eps_ &&
         o->weight_decay_ == weight_decay_;
}

}  // namespace mlx::core::fast
