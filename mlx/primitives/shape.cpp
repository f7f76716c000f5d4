#include "mlx/primitives/shape.h"

#include <algorithm>
#include <cstdlib>

namespace mlx::core {

bool AsType::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const AsType*>(&other);
  return o && o->dtype_ == dtype_;
}
bool Broadcast::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Broadcast*>(&other);
  return o && o->shape_ == shape_;
}
bool Reshape::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Reshape*>(&other);
  return o && o->shape_ == shape_;
}
bool Transpose::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Transpose*>(&other);
  return o && o->axes_ == axes_;
}
bool Slice::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Slice*>(&other);
  return o && o->start_ == start_ && o->stop_ == stop_ && o->strides_ == strides_;
}
bool AsStrided::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const AsStrided*>(&other);
  return o && o->shape_ == shape_ && o->strides_ == strides_ && o->offset_ == offset_;
}

bool Concatenate::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Concatenate*>(&other);
  return o && o->axis_ == axis_;
}
std::vector<Shape> Concatenate::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  shape[axis_] = 0;
  for (auto& in : inputs) {
    shape[axis_] += in.shape(axis_);
  }
  return {shape};
}
bool SliceUpdate::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const SliceUpdate*>(&other);
  return o && o->start_ == start_ && o->stop_ == stop_ && o->strides_ == strides_;
}
bool Diagonal::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Diagonal*>(&other);
  return o && o->offset_ == offset_ && o->axis1_ == axis1_ && o->axis2_ == axis2_;
}
bool View::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const View*>(&other);
  return o && o->dtype_ == dtype_;
}

size_t span_for_layout(const Shape& shape, const Strides& strides) {
  size_t span = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      return 0;
    }
    span += static_cast<size_t>(shape[i] - 1) * static_cast<size_t>(std::llabs(strides[i]));
  }
  return span;
}

array::Flags flags_for_layout(const Shape& shape, const Strides& strides) {
  array::Flags f{};
  size_t size = shape_size(shape);
  bool row = true, col = true, positive = true;
  int64_t expect_row = 1, expect_col = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] == 1) {
      continue;
    }
    row &= strides[i] == expect_row;
    expect_row *= shape[i];
    positive &= strides[i] > 0;
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) {
      continue;
    }
    col &= strides[i] == expect_col;
    expect_col *= shape[i];
  }
  f.row_contiguous = row;
  f.col_contiguous = col;
  f.contiguous = row || col;
  if (!f.contiguous && positive && size > 0) {
    // Dense in some axis order: sorted by stride, each stride is the product of the sizes
    // of the axes before it (no gaps, no repeats).
    std::vector<std::pair<int64_t, int32_t>> dims;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] != 1) {
        dims.emplace_back(strides[i], shape[i]);
      }
    }
    std::sort(dims.begin(), dims.end());
    int64_t expect = 1;
    bool dense = true;
    for (auto& [stride, n] : dims) {
      dense &= stride == expect;
      expect *= n;
    }
    f.contiguous = dense;
  }
  return f;
}

}  // namespace mlx::core
