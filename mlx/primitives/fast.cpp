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
         o->scale_ == scale_ && o->has_freqs_ == has_freqs_;
}

bool ScaledDotProductAttention::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ScaledDotProductAttention*>(&other);
  return o && o->scale_ == scale_ && o->causal_ == causal_ && o->has_mask_ == has_mask_ &&
         o->has_sinks_ == has_sinks_;
}

std::vector<Shape> ScaledDotProductAttention::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  shape.back() = inputs[2].shape().back();
  return {shape};
}

}  // namespace mlx::core::fast
