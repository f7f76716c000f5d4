// Primitives that exist for the function transforms. Most compute nothing (their outputs
// share their inputs' buffers, on any device); the shapeless ones below compute what depends on
// shapes known only when a trace is replayed.
#pragma once

#include <functional>
#include <optional>

#include "mlx/primitives/primitive.h"
#include "mlx/transforms/transforms.h"

namespace mlx::core {

// Identity whose derivative is zero: differentiation stops here.
class StopGradient : public UnaryPrimitive {
 public:
  explicit StopGradient(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(StopGradient)
  const char* name() const override { return "StopGradient"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const StopGradient*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums,
                         const std::vector<array>& outputs) override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
};

// Inputs {x_0..x_{n-1}, deps...}; outputs x_0..x_{n-1} unchanged, available only once the
// dependencies are computed (orders work, e.g. a checkpoint's recomputation after the
// cotangents arrive).
class Depends : public Primitive {
 public:
  Depends(Stream stream, size_t num_outputs) : Primitive(stream), num_outputs_(num_outputs) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Depends, num_outputs_)
  const char* name() const override { return "Depends"; }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums,
                         const std::vector<array>& outputs) override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;

 private:
  size_t num_outputs_;
};

// The node custom_function puts around a function: inputs {primals..., fun's outputs...},
// outputs fun's outputs. Its rules are the custom ones, or else those of fun's own graph.
class CustomTransforms : public Primitive {
 public:
  CustomTransforms(Stream stream, size_t num_primals, ArrayFn fun,
                   std::optional<CustomVJPFn> vjp_fun, std::optional<CustomJVPFn> jvp_fun,
                   std::optional<CustomVmapFn> vmap_fun)
      : Primitive(stream),
        num_primals_(num_primals),
        fun_(std::move(fun)),
        vjp_fun_(std::move(vjp_fun)),
        jvp_fun_(std::move(jvp_fun)),
        vmap_fun_(std::move(vmap_fun)) {}
  MLX_DECLARE_EVAL
  const char* name() const override { return "CustomTransforms"; }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums,
                         const std::vector<array>& outputs) override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
  size_t num_primals() const { return num_primals_; }

 private:
  size_t num_primals_;
  ArrayFn fun_;
  std::optional<CustomVJPFn> vjp_fun_;
  std::optional<CustomJVPFn> jvp_fun_;
  std::optional<CustomVmapFn> vmap_fun_;
};

// Shapeless compile traces: nodes whose shapes are recomputed from their inputs' shapes.

// Broadcasts input 0 to the shape all inputs broadcast to together (the others only lend
// their shapes). Binary ops build it instead of Broadcast while a shapeless trace is active.
class DynamicBroadcast : public UnaryPrimitive {
 public:
  explicit DynamicBroadcast(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(DynamicBroadcast)
  const char* name() const override { return "DynamicBroadcast"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const DynamicBroadcast*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  MLX_DECLARE_TRANSFORM_RULES
};

// Input 0 summed over the axes a DynamicBroadcast added or stretched to reach its shape from
// input 1's (which only lends its shape): the DynamicBroadcast's vjp in shapeless traces, where
// which axes were broadcast is known only when the shapes are. Its output has input 1's shape;
// with `keep_front` (its vmap: the batch axis in front of both, of equal ranks) axis 0 is never
// summed and has input 0's size.
class DynamicUnbroadcast : public UnaryPrimitive {
 public:
  explicit DynamicUnbroadcast(Stream stream, bool keep_front = false)
      : UnaryPrimitive(stream), keep_front_(keep_front) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(DynamicUnbroadcast, keep_front_)
  const char* name() const override { return "DynamicUnbroadcast"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const DynamicUnbroadcast*>(&other);
    return o && o->keep_front_ == keep_front_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  // The axes of `from` that are summed (those `to` lacks or has as 1 where `from` does not,
  // axis 0 excepted with keep_front); throws when `to` does not broadcast to `from`.
  static std::vector<int> summed_axes(const Shape& from, const Shape& to, bool keep_front);
  MLX_DECLARE_TRANSFORM_RULES

 private:
  bool keep_front_;
};

// The number of elements of the input over `axes` (or its reciprocal), as a scalar of
// `dtype`; the input's values are not read. mean and var use it in shapeless traces.
class NumberOfElements : public UnaryPrimitive {
 public:
  NumberOfElements(Stream stream, std::vector<int> axes, bool inverted, Dtype dtype)
      : UnaryPrimitive(stream), axes_(std::move(axes)), inverted_(inverted), dtype_(dtype) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(NumberOfElements, axes_, inverted_, dtype_)
  const char* name() const override { return "NumberOfElements"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>&) override { return {Shape{}}; }
  MLX_DECLARE_TRANSFORM_RULES

 private:
  std::vector<int> axes_;
  bool inverted_;
  Dtype dtype_;
};

// squeeze / expand_dims of given axes (a Reshape elsewhere, whose target shape is fixed).
class SqueezeAxes : public UnaryPrimitive {
 public:
  SqueezeAxes(Stream stream, std::vector<int> axes)
      : UnaryPrimitive(stream), axes_(std::move(axes)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(SqueezeAxes, axes_)
  const char* name() const override { return "Squeeze"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  MLX_DECLARE_TRANSFORM_RULES

 private:
  std::vector<int> axes_;
};

class ExpandAxes : public UnaryPrimitive {
 public:
  ExpandAxes(Stream stream, std::vector<int> axes)
      : UnaryPrimitive(stream), axes_(std::move(axes)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(ExpandAxes, axes_)
  const char* name() const override { return "ExpandDims"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  MLX_DECLARE_TRANSFORM_RULES

 private:
  std::vector<int> axes_;
};

namespace detail {
// Outputs of `primitive` applied to `inputs`, one per array of `like`, with its shape and dtype.
std::vector<array> outputs_like(const std::vector<array>& like,
                                std::shared_ptr<Primitive> primitive,
                                const std::vector<array>& inputs);
}  // namespace detail

}  // namespace mlx::core
