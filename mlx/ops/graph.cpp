#include "mlx/ops/graph.h"

#include "mlx/ops/reduction.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/transform.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

array stop_gradient(const array& a, StreamOrDevice s) {
  return array(a.shape(), a.dtype(), std::make_shared<StopGradient>(to_stream(s)), {a});
}

std::vector<array> depends(const std::vector<array>& inputs,
                           const std::vector<array>& dependencies) {
  if (dependencies.empty() || inputs.empty()) {
    return inputs;
  }
  std::vector<array> all = inputs;
  all.insert(all.end(), dependencies.begin(), dependencies.end());
  return detail::outputs_like(inputs, std::make_shared<Depends>(to_stream({}), inputs.size()), all);
}

array dynamic_broadcast(const std::vector<array>& inputs, StreamOrDevice s) {
  std::vector<Shape> shapes;
  for (auto& in : inputs) {
    shapes.push_back(in.shape());
  }
  Shape shape = broadcast_shapes(shapes, "broadcast");
  if (!detail::in_shapeless_tracing() || inputs.size() == 1) {
    return broadcast_to(inputs[0], shape, s);
  }
  return array(std::move(shape), inputs[0].dtype(),
               std::make_shared<DynamicBroadcast>(to_stream(s)), inputs);
}

array unbroadcast(const array& x, const array& like, StreamOrDevice s) {
  if (detail::in_shapeless_tracing()) {
    return array(like.shape(), x.dtype(), std::make_shared<DynamicUnbroadcast>(to_stream(s)),
                 {x, like});
  }
  auto axes = DynamicUnbroadcast::summed_axes(x.shape(), like.shape(), false);
  array summed = axes.empty() ? x : sum(x, axes, true, s);
  return reshape(summed, like.shape(), s);
}

array number_of_elements(const array& a, const std::vector<int>& axes, bool inverted, Dtype dtype,
                         StreamOrDevice s) {
  std::vector<int> ax = normalize_axes(axes, a.ndim(), "number_of_elements");
  if (!detail::in_shapeless_tracing()) {
    double n = 1;
    for (int i : ax) {
      n *= a.shape(i);
    }
    return array(inverted ? 1.0 / n : n, dtype);
  }
  return array(Shape{}, dtype,
               std::make_shared<NumberOfElements>(to_stream(s), ax, inverted, dtype), {a});
}

}  // namespace mlx::core
