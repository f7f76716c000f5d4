#include "mlx/primitives/reduction.h"

namespace mlx::core {

namespace {

Shape keepdims_shape(Shape shape, const std::vector<int>& axes) {
  for (int ax : axes) {
    shape[ax] = 1;
  }
  return shape;
}

}  // namespace

const char* Reduce::name() const {
  switch (type_) {
    case And:
      return "And";
    case Or:
      return "Or";
    case Sum:
      return "Sum";
    case Prod:
      return "Prod";
    case Min:
      return "Min";
    case Max:
      return "Max";
  }
  return "Reduce";
}

bool Reduce::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Reduce*>(&other);
  return o && o->type_ == type_ && o->axes_ == axes_;
}

std::vector<Shape> Reduce::output_shapes(const std::vector<array>& inputs) {
  return {keepdims_shape(inputs[0].shape(), axes_)};
}

bool ArgReduce::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ArgReduce*>(&other);
  return o && o->type_ == type_ && o->axis_ == axis_;
}

std::vector<Shape> ArgReduce::output_shapes(const std::vector<array>& inputs) {
  return {keepdims_shape(inputs[0].shape(), {axis_})};
}

const char* Scan::name() const {
  switch (type_) {
    case Max:
      return "CumMax";
    case Min:
      return "CumMin";
    case Sum:
      return "CumSum";
    case Prod:
      return "CumProd";
    case LogAddExp:
      return "CumLogAddExp";
  }
  return "Scan";
}

bool Scan::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Scan*>(&other);
  return o && o->type_ == type_ && o->axis_ == axis_ && o->reverse_ == reverse_ &&
         o->inclusive_ == inclusive_;
}

bool Softmax::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Softmax*>(&other);
  return o && o->precise_ == precise_;
}

std::vector<Shape> LogSumExp::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  shape.back() = 1;
  return {shape};
}

}  // namespace mlx::core
