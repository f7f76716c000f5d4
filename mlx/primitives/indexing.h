// Indexing and sorting primitives.
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// inputs: {a, indices...} with the indices already broadcast to one shape I.
// out = slices of `slice_sizes` starting at the indexed positions; shape I + slice_sizes.
class Gather : public UnaryPrimitive {
 public:
  // `op` names the public op in error messages.
  Gather(Stream stream, std::vector<int> axes, Shape slice_sizes, const char* op = "gather")
      : UnaryPrimitive(stream),
        axes_(std::move(axes)),
        slice_sizes_(std::move(slice_sizes)),
        op_(op) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Gather, axes_, slice_sizes_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Gather"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const std::vector<int>& axes() const { return axes_; }
  const Shape& slice_sizes() const { return slice_sizes_; }

 private:
  std::vector<int> axes_;
  Shape slice_sizes_;
  const char* op_;
};

// inputs: {a, indices} with equal shapes except along `axis` (broadcasts already applied).
// out[..., j, ...] = a[..., indices[..., j, ...], ...].
class GatherAxis : public UnaryPrimitive {
 public:
  GatherAxis(Stream stream, int axis) : UnaryPrimitive(stream), axis_(axis) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(GatherAxis, axis_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "GatherAxis"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[1].shape()};
  }
  int axis() const { return axis_; }

 private:
  int axis_;
};

enum class ScatterReduce { None, Sum, Prod, Max, Min };

// inputs: {a, indices..., updates}; indices broadcast to one shape I, updates row-contiguous
// with shape I + slice shape (one dimension per dimension of a) and a's dtype.
class Scatter : public UnaryPrimitive {
 public:
  Scatter(Stream stream, ScatterReduce reduce, std::vector<int> axes)
      : UnaryPrimitive(stream), reduce_(reduce), axes_(std::move(axes)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Scatter, MLX_ENUM(reduce_, Min), axes_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Scatter"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  ScatterReduce reduce() const { return reduce_; }
  const std::vector<int>& axes() const { return axes_; }
  // The public op, for error messages.
  const char* op_name() const;
  // The shape of one update slice: the trailing dimensions of `updates` (one per dimension of
  // the array scattered into).
  static Shape update_slice(const array& a, const array& updates) {
    return Shape(updates.shape().end() - a.ndim(), updates.shape().end());
  }

 private:
  ScatterReduce reduce_;
  std::vector<int> axes_;
};

// inputs: {a, indices, updates}; indices and updates row-contiguous with a's shape except
// along `axis`, updates with a's dtype.
class ScatterAxis : public UnaryPrimitive {
 public:
  ScatterAxis(Stream stream, ScatterReduce reduce, int axis)
      : UnaryPrimitive(stream), reduce_(reduce), axis_(axis) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(ScatterAxis, MLX_ENUM(reduce_, Min), axis_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "ScatterAxis"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  ScatterReduce reduce() const { return reduce_; }
  int axis() const { return axis_; }
  // The public op, for error messages.
  const char* op_name() const {
    return reduce_ == ScatterReduce::Sum ? "scatter_add_axis" : "put_along_axis";
  }

 private:
  ScatterReduce reduce_;
  int axis_;
};

// Sorting along one axis. kth is already normalized to [0, axis size).
enum class SortKind { Sort, ArgSort, Partition, ArgPartition };

class SortAlongAxis : public UnaryPrimitive {
 public:
  SortAlongAxis(Stream stream, SortKind kind, int axis, int kth = 0)
      : UnaryPrimitive(stream), kind_(kind), axis_(axis), kth_(kth) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(SortAlongAxis, MLX_ENUM(kind_, ArgPartition), axis_, kth_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  SortKind kind() const { return kind_; }
  int axis() const { return axis_; }
  int kth() const { return kth_; }

 private:
  SortKind kind_;
  int axis_;
  int kth_;
};

}  // namespace mlx::core
