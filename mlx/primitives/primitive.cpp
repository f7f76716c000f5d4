#include "mlx/primitives/primitive.h"

#include <stdexcept>

#include "mlx/utils.h"

namespace mlx::core {

std::vector<array> Primitive::jvp(const std::vector<array>&, const std::vector<array>&,
                                  const std::vector<int>&) {
  throw std::invalid_argument(msg("[", name(), "] jvp is not implemented."));
}

std::vector<array> Primitive::vjp(const std::vector<array>&, const std::vector<array>&,
                                  const std::vector<int>&, const std::vector<array>&) {
  throw std::invalid_argument(msg("[", name(), "] vjp is not implemented."));
}

std::pair<std::vector<array>, std::vector<int>> Primitive::vmap(const std::vector<array>&,
                                                                const std::vector<int>&) {
  throw std::invalid_argument(msg("[", name(), "] vmap is not implemented."));
}

std::vector<Shape> Primitive::output_shapes(const std::vector<array>&) {
  throw std::invalid_argument(msg("[", name(), "] cannot infer output shapes."));
}

}  // namespace mlx::core
