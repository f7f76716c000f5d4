// Reduction primitives: reductions over axes, arg reductions, cumulative scans and the fused
// softmax / logsumexp over the last axis.
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// Reduces `axes` of its input; the output keeps them as size-1 dimensions.
class Reduce : public UnaryPrimitive {
 public:
  enum ReduceType { And, Or, Sum, Prod, Min, Max };

  Reduce(Stream stream, ReduceType type, std::vector<int> axes)
      : UnaryPrimitive(stream), type_(type), axes_(std::move(axes)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Reduce, MLX_ENUM(type_, Max), axes_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  ReduceType type() const { return type_; }
  const std::vector<int>& axes() const { return axes_; }

 private:
  ReduceType type_;
  std::vector<int> axes_;
};

// Index (uint32) of the first largest / smallest element along `axis`, NaN counting as the
// extreme; the output keeps the axis as a size-1 dimension.
class ArgReduce : public UnaryPrimitive {
 public:
  enum ReduceType { ArgMin, ArgMax };

  ArgReduce(Stream stream, ReduceType type, int axis)
      : UnaryPrimitive(stream), type_(type), axis_(axis) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(ArgReduce, MLX_ENUM(type_, ArgMax), axis_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return type_ == ArgMin ? "ArgMin" : "ArgMax"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  ReduceType type() const { return type_; }
  int axis() const { return axis_; }

 private:
  ReduceType type_;
  int axis_;
};

// Cumulative reduction along `axis`; an exclusive scan shifts by one and starts from the
// identity, a reverse scan runs from the end.
class Scan : public UnaryPrimitive {
 public:
  enum ReduceType { Max, Min, Sum, Prod, LogAddExp };

  Scan(Stream stream, ReduceType type, int axis, bool reverse, bool inclusive)
      : UnaryPrimitive(stream),
        type_(type),
        axis_(axis),
        reverse_(reverse),
        inclusive_(inclusive) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Scan, MLX_ENUM(type_, LogAddExp), axis_, reverse_, inclusive_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  ReduceType type() const { return type_; }
  int axis() const { return axis_; }
  bool reverse() const { return reverse_; }
  bool inclusive() const { return inclusive_; }

 private:
  ReduceType type_;
  int axis_;
  bool reverse_;
  bool inclusive_;
};

// Softmax over the last axis of a floating-point input (16-bit floats compute in float32).
class Softmax : public UnaryPrimitive {
 public:
  Softmax(Stream stream, bool precise) : UnaryPrimitive(stream), precise_(precise) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Softmax, precise_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Softmax"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  bool precise() const { return precise_; }

 private:
  bool precise_;
};

// log(sum(exp(x))) over the last axis of a floating-point input, kept as a size-1 dimension.
class LogSumExp : public UnaryPrimitive {
 public:
  explicit LogSumExp(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(LogSumExp)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "LogSumExp"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const LogSumExp*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

}  // namespace mlx::core
