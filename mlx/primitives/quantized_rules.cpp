// Transform rules of QuantizedMatmul: linear in x (the product with the transposed quantized
// matrix); the quantized matrix, its scales and biases carry no derivative.
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/primitives/quantized.h"
#include "mlx/transforms/rule_utils.h"

namespace mlx::core {

namespace {

void check_x_only(const std::vector<int>& argnums) {
  for (int a : argnums) {
    if (a != 0) {
      throw std::invalid_argument(
          "[QuantizedMatmul] Derivatives with respect to the quantized matrix, its scales or "
          "its biases are not supported.");
    }
  }
}

}  // namespace

std::vector<array> QuantizedMatmul::jvp(const std::vector<array>& primals,
                                        const std::vector<array>& tangents,
                                        const std::vector<int>& argnums) {
  check_x_only(argnums);
  return {quantized_matmul(tangents[0], primals[1], primals[2], primals[3], transpose_, group_size_,
                           bits_, "affine", stream())};
}

std::vector<array> QuantizedMatmul::vjp(const std::vector<array>& primals,
                                        const std::vector<array>& cotangents,
                                        const std::vector<int>& argnums,
                                        const std::vector<array>&) {
  check_x_only(argnums);
  return {quantized_matmul(cotangents[0], primals[1], primals[2], primals[3], !transpose_,
                           group_size_, bits_, "affine", stream())};
}

std::pair<std::vector<array>, std::vector<int>> QuantizedMatmul::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  for (size_t i = 1; i < axes.size(); ++i) {
    if (axes[i] >= 0) {
      throw std::invalid_argument(
          "[QuantizedMatmul] vmap over the quantized matrix, its scales or its biases is not "
          "supported.");
    }
  }
  array x = detail::batch_first(inputs[0], axes[0]);
  return {{quantized_matmul(x, inputs[1], inputs[2], inputs[3], transpose_, group_size_, bits_,
                            "affine", stream())},
          {0}};
}

}  // namespace mlx::core
