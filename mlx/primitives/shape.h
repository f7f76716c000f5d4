// Layout primitives. Most are views: their output shares the input's buffer.
#pragma once

#include <optional>

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// Dtype conversion (copies unless the input buffer can be donated).
class AsType : public UnaryPrimitive {
 public:
  AsType(Stream stream, Dtype dtype) : UnaryPrimitive(stream), dtype_(dtype) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(AsType, dtype_)
  const char* name() const override { return "AsType"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  Dtype dtype_;
};

// A row-contiguous copy (no-op view when the input already is).
class Copy : public UnaryPrimitive {
 public:
  explicit Copy(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Copy)
  const char* name() const override { return "Copy"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const Copy*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  MLX_DECLARE_TRANSFORM_RULES
};

class Broadcast : public UnaryPrimitive {
 public:
  Broadcast(Stream stream, Shape shape) : UnaryPrimitive(stream), shape_(std::move(shape)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Broadcast, shape_)
  const char* name() const override { return "Broadcast"; }
  bool is_equivalent(const Primitive& other) const override;
  const Shape& shape() const { return shape_; }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  Shape shape_;
};

class Reshape : public UnaryPrimitive {
 public:
  Reshape(Stream stream, Shape shape) : UnaryPrimitive(stream), shape_(std::move(shape)) {}
  // For shapeless compile: the input shape it was traced with, so that output_shapes can
  // carry the dimensions it kept over to new inputs (see output_shapes).
  Reshape(Stream stream, Shape shape, Shape traced_input, int infer)
      : UnaryPrimitive(stream),
        shape_(std::move(shape)),
        traced_input_(std::move(traced_input)),
        infer_(infer) {}
  // The same from an exported state (traced_input absent outside shapeless traces).
  Reshape(Stream stream, Shape shape, std::optional<Shape> traced_input, int infer)
      : UnaryPrimitive(stream),
        shape_(std::move(shape)),
        traced_input_(std::move(traced_input)),
        infer_(infer) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Reshape, shape_, traced_input_, infer_)
  const char* name() const override { return "Reshape"; }
  bool is_equivalent(const Primitive& other) const override;
  // The traced shape with the leading and trailing dimensions it shared with the traced input
  // taken from the new input, and the dimension given as -1 (or, without one, the only other
  // dimension) inferred from the size: x.reshape(B, L, H, -1) follows B and L. Throws when
  // that cannot match the new input.
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  MLX_DECLARE_TRANSFORM_RULES
 private:
  Shape shape_;
  std::optional<Shape> traced_input_;
  int infer_ = -1;  // the dimension the caller gave as -1
};

class Transpose : public UnaryPrimitive {
 public:
  Transpose(Stream stream, std::vector<int> axes)
      : UnaryPrimitive(stream), axes_(std::move(axes)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Transpose, axes_)
  const char* name() const override { return "Transpose"; }
  bool is_equivalent(const Primitive& other) const override;
  const std::vector<int>& axes() const { return axes_; }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    Shape out;
    for (int ax : axes_) {
      out.push_back(inputs[0].shape(ax));
    }
    return {out};
  }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  std::vector<int> axes_;
};

// Strided view: out[i] = in[start + i * step] per axis (steps may be negative). The bounds are
// normalized by the op: start is the first index read, stop is clamped, both are 0 on empty axes.
class Slice : public UnaryPrimitive {
 public:
  Slice(Stream stream, Shape start, Shape stop, Shape strides)
      : UnaryPrimitive(stream),
        start_(std::move(start)),
        stop_(std::move(stop)),
        strides_(std::move(strides)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Slice, start_, stop_, strides_)
  const char* name() const override { return "Slice"; }
  bool is_equivalent(const Primitive& other) const override;
  const Shape& start() const { return start_; }
  const Shape& stop() const { return stop_; }
  const Shape& strides() const { return strides_; }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  Shape start_;
  Shape stop_;
  Shape strides_;
};

// The pieces of an array along `axis` between consecutive boundaries (0 < b1 <= b2 ... <= n),
// as views of its buffer like Slice's. One primitive for all pieces so that the derivative is
// one concatenation of their cotangents: a Slice per piece gives each a zero-filled copy of the
// whole input to sum (for a fused QKV projection, six passes over the cotangent instead of one).
class Split : public Primitive {
 public:
  Split(Stream stream, Shape boundaries, int axis)
      : Primitive(stream), boundaries_(std::move(boundaries)), axis_(axis) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Split, boundaries_, axis_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Split"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const Shape& boundaries() const { return boundaries_; }
  int axis() const { return axis_; }

 private:
  Shape boundaries_;  // the interior boundaries: piece i spans [b_{i-1}, b_i), b_0 = 0, b_k = n
  int axis_;
};

class AsStrided : public UnaryPrimitive {
 public:
  AsStrided(Stream stream, Shape shape, Strides strides, size_t offset)
      : UnaryPrimitive(stream),
        shape_(std::move(shape)),
        strides_(std::move(strides)),
        offset_(offset) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(AsStrided, shape_, strides_, offset_)
  const char* name() const override { return "AsStrided"; }
  bool is_equivalent(const Primitive& other) const override;

  MLX_DECLARE_TRANSFORM_RULES
 private:
  Shape shape_;
  Strides strides_;
  size_t offset_;
};

// Joins the inputs along `axis`, writing each into its slot of the output in one pass. The
// inputs may differ in dtype: each is converted to the output dtype while it is copied.
class Concatenate : public UnaryPrimitive {
 public:
  Concatenate(Stream stream, int axis) : UnaryPrimitive(stream), axis_(axis) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Concatenate, axis_)
  const char* name() const override { return "Concatenate"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  int axis() const { return axis_; }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  int axis_;
};

// out = src with out[start:stop:strides] = update. The update (input 1) already has the slice's
// shape and is converted to the source's dtype while copied; start/stop/strides are normalized
// (start is the first index written). Writes in place when the source buffer can be donated.
class SliceUpdate : public UnaryPrimitive {
 public:
  SliceUpdate(Stream stream, Shape start, Shape stop, Shape strides)
      : UnaryPrimitive(stream),
        start_(std::move(start)),
        stop_(std::move(stop)),
        strides_(std::move(strides)) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(SliceUpdate, start_, stop_, strides_)
  const char* name() const override { return "SliceUpdate"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  const Shape& start() const { return start_; }
  const Shape& stop() const { return stop_; }
  const Shape& strides() const { return strides_; }

  MLX_DECLARE_TRANSFORM_RULES
 private:
  Shape start_;
  Shape stop_;
  Shape strides_;
};

// View of the diagonal of the (axis1, axis2) planes, as the last output axis. Works on any input
// layout without copying.
class Diagonal : public UnaryPrimitive {
 public:
  Diagonal(Stream stream, int offset, int axis1, int axis2)
      : UnaryPrimitive(stream), offset_(offset), axis1_(axis1), axis2_(axis2) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Diagonal, offset_, axis1_, axis2_)
  const char* name() const override { return "Diagonal"; }
  bool is_equivalent(const Primitive& other) const override;

  MLX_DECLARE_TRANSFORM_RULES
 private:
  int offset_;
  int axis1_;
  int axis2_;
};

// Reinterprets the input's bytes as the output dtype. A view when the layout allows it (same
// item size, or a row-contiguous, suitably aligned input); otherwise a contiguous copy first.
class View : public UnaryPrimitive {
 public:
  View(Stream stream, Dtype dtype) : UnaryPrimitive(stream), dtype_(dtype) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(View, dtype_)
  const char* name() const override { return "View"; }
  bool is_equivalent(const Primitive& other) const override;

  MLX_DECLARE_TRANSFORM_RULES
 private:
  Dtype dtype_;
};

// Layout facts about a strided view, computed from its shape and strides.
array::Flags flags_for_layout(const Shape& shape, const Strides& strides);
// Elements between the lowest and highest addressed element, inclusive.
size_t span_for_layout(const Shape& shape, const Strides& strides);

}  // namespace mlx::core
