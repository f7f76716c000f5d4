#include "mlx/primitives/linalg.h"

#include <stdexcept>

#include "mlx/utils.h"

namespace mlx::core {

namespace {

Shape product_shape(const array& a, const array& b) {
  Shape shape = a.shape();
  shape.back() = b.shape().back();
  return shape;
}

}  // namespace

std::vector<Shape> Matmul::output_shapes(const std::vector<array>& inputs) {
  return {product_shape(inputs[0], inputs[1])};
}

std::vector<Shape> AddMM::output_shapes(const std::vector<array>& inputs) {
  return {product_shape(inputs[1], inputs[2])};
}

std::vector<Shape> MatmulColumnSums::output_shapes(const std::vector<array>& inputs) {
  return {{inputs[0].shape(0), inputs[1].shape(1)}, {1, inputs[1].shape(1)}};
}

std::vector<Shape> MatmulGeluApprox::output_shapes(const std::vector<array>& inputs) {
  const array &a = inputs[0], &b = inputs[1];
  if (a.ndim() != 2 || b.ndim() != 2 || a.shape(1) != b.shape(0) ||
      (inputs.size() == 3 && inputs[2].shape() != Shape{1, b.shape(1)})) {
    throw std::invalid_argument(msg("[matmul_gelu_approx] Cannot multiply ", a.shape(), " by ",
                                    b.shape(), inputs.size() == 3 ? " and add a bias of " : "",
                                    inputs.size() == 3 ? inputs[2].shape() : Shape{}, "."));
  }
  return {{a.shape(0), b.shape(1)}};
}

std::vector<Shape> MatmulGeluApproxVjp::output_shapes(const std::vector<array>& inputs) {
  const array &a = inputs[0], &b = inputs[1], &x = inputs[2];
  if (a.ndim() != 2 || b.ndim() != 2 || a.shape(1) != b.shape(0) ||
      static_cast<size_t>(a.shape(0)) * b.shape(1) != x.size()) {
    throw std::invalid_argument(msg("[matmul_gelu_approx_vjp] The product of ", a.shape(), " and ",
                                    b.shape(), " cannot be reshaped to ", x.shape(), "."));
  }
  return {x.shape()};
}

bool AddMM::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const AddMM*>(&other);
  return o && o->alpha_ == alpha_ && o->beta_ == beta_;
}

}  // namespace mlx::core
