#include "mlx/primitives/shape.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "mlx/utils.h"

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
std::vector<Shape> Reshape::output_shapes(const std::vector<array>& inputs) {
  const Shape& in = inputs[0].shape();
  if (!traced_input_) {
    throw std::invalid_argument(
        msg("[Reshape] The reshape to ", shape_, " was not traced shapelessly."));
  }
  const Shape& traced = *traced_input_;
  size_t n = shape_.size();
  std::vector<bool> carried(n, false);
  Shape out = shape_;
  // Leading dimensions shared with the traced input follow the new input (the one given as -1
  // is always inferred, even when it matched: it may have been 1).
  const size_t infer = infer_ >= 0 ? static_cast<size_t>(infer_) : n;
  size_t lead = 0;
  while (lead < n && lead < infer && lead < traced.size() && lead < in.size() &&
         shape_[lead] == traced[lead]) {
    out[lead] = in[lead];
    carried[lead] = true;
    ++lead;
  }
  // So do trailing ones (not overlapping the leading ones in any of the three shapes).
  for (size_t k = 1; k + lead <= n && k + lead <= traced.size() && k + lead <= in.size(); ++k) {
    if (n - k == infer || shape_[n - k] != traced[traced.size() - k]) {
      break;
    }
    out[n - k] = in[in.size() - k];
    carried[n - k] = true;
  }
  int64_t size = 1;
  for (int d : in) {
    size *= d;
  }
  // The dimension to infer: the one the caller gave as -1, else the only one not carried.
  int free_dim = infer_ >= 0 && !carried[infer_] ? infer_ : -1;
  if (infer_ < 0 && std::count(carried.begin(), carried.end(), false) == 1) {
    free_dim = static_cast<int>(std::find(carried.begin(), carried.end(), false) - carried.begin());
  }
  int64_t known = 1;
  for (size_t i = 0; i < n; ++i) {
    if (static_cast<int>(i) != free_dim) {
      known *= out[i];
    }
  }
  if (free_dim >= 0 && known > 0 && size % known == 0) {
    out[free_dim] = static_cast<int>(size / known);
    known *= out[free_dim];
  } else if (free_dim >= 0) {
    known = -1;
  }
  if (known != size) {
    throw std::invalid_argument(
        msg("[reshape] In a shapeless compiled function, the reshape of ", traced, " to ", shape_,
            " cannot be replayed for an input of shape ", in,
            ": only its leading and trailing dimensions that match the input, and the one "
            "given as -1, follow new inputs. Compile without shapeless=True for this "
            "function."));
  }
  return {out};
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
bool Split::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Split*>(&other);
  return o && o->boundaries_ == boundaries_ && o->axis_ == axis_;
}
std::vector<Shape> Split::output_shapes(const std::vector<array>& inputs) {
  const Shape& in = inputs[0].shape();
  if (axis_ >= static_cast<int>(in.size()) ||
      (!boundaries_.empty() && boundaries_.back() > in[axis_])) {
    throw std::invalid_argument(msg("[Split] Boundaries ", boundaries_, " along axis ", axis_,
                                    " do not fit an input of shape ", in, "."));
  }
  std::vector<Shape> shapes;
  int32_t lo = 0;
  for (size_t i = 0; i <= boundaries_.size(); ++i) {
    int32_t hi = i < boundaries_.size() ? boundaries_[i] : in[axis_];
    shapes.push_back(in);
    shapes.back()[axis_] = hi - lo;
    lo = hi;
  }
  return shapes;
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
