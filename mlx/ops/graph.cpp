#include "mlx/ops/graph.h"

#include "mlx/primitives/transform.h"

namespace mlx::core {

array stop_gradient(const array& a, StreamOrDevice s) {
  return array(a.shape(), a.dtype(), std::make_shared<StopGradient>(to_stream(s)), {a});
}

std::vector<array> depends(const std::vector<array>& inputs,
                           const std::vector<array>& dependencies) {
  if (dependencies.empty() || inputs.empty()) {
    return inputs;
  }
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (auto& in : inputs) {
    shapes.push_back(in.shape());
    dtypes.push_back(in.dtype());
  }
  std::vector<array> all = inputs;
  all.insert(all.end(), dependencies.begin(), dependencies.end());
  return array::make_arrays(std::move(shapes), dtypes,
                            std::make_shared<Depends>(to_stream({}), inputs.size()), all);
}

}  // namespace mlx::core
