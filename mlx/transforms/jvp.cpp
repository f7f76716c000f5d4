// Forward mode: trace the function on identity copies of the primals, then push tangents
// through the traced graph in order with each primitive's jvp rule.
#include <stdexcept>
#include <unordered_map>

#include "mlx/ops.h"
#include "mlx/primitives/primitive.h"
#include "mlx/transforms/graph.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

std::pair<std::vector<array>, std::vector<array>> jvp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& tangents) {
  if (primals.size() != tangents.size()) {
    throw std::invalid_argument(
        msg("[jvp] Got ", primals.size(), " primals but ", tangents.size(), " tangents."));
  }
  for (size_t i = 0; i < primals.size(); ++i) {
    if (primals[i].shape() != tangents[i].shape()) {
      throw std::invalid_argument(msg("[jvp] Primal ", i, " has shape ", primals[i].shape(),
                                      " but its tangent has shape ", tangents[i].shape(), "."));
    }
  }
  detail::TracingScope scope;
  std::vector<array> traced = primals;
  detail::IdSet sources;
  std::unordered_map<uintptr_t, array> tangent_of;
  for (size_t i = 0; i < primals.size(); ++i) {
    if (!is_inexact(primals[i].dtype())) {
      continue;  // integer inputs are constants
    }
    traced[i] = detail::trace_source(primals[i]);
    traced[i].set_tracer(true);
    sources.insert(traced[i].id());
    tangent_of.emplace(traced[i].id(), astype(tangents[i], primals[i].dtype()));
  }
  std::vector<array> outputs = fun(traced);

  for (auto& node : detail::dependent_tape(outputs, sources, detail::Walk::differentiate)) {
    const std::vector<array>& inputs = node.inputs();
    std::vector<int> argnums;
    std::vector<array> input_tangents;
    for (size_t j = 0; j < inputs.size(); ++j) {
      auto found = tangent_of.find(inputs[j].id());
      if (found != tangent_of.end()) {
        argnums.push_back(static_cast<int>(j));
        input_tangents.push_back(found->second);
      }
    }
    if (argnums.empty()) {
      continue;  // depends on the primals only through integer values
    }
    std::vector<array> node_outputs = node.outputs();
    std::vector<array> output_tangents = node.primitive().jvp(inputs, input_tangents, argnums);
    if (output_tangents.size() != node_outputs.size()) {
      throw std::logic_error(msg("[jvp] The rule of ", node.primitive().name(), " returned ",
                                 output_tangents.size(), " tangents for ", node_outputs.size(),
                                 " outputs."));
    }
    for (size_t k = 0; k < node_outputs.size(); ++k) {
      if (is_inexact(node_outputs[k].dtype())) {
        tangent_of.emplace(node_outputs[k].id(), std::move(output_tangents[k]));
      }
    }
  }

  std::vector<array> result;
  result.reserve(outputs.size());
  for (auto& o : outputs) {
    auto found = tangent_of.find(o.id());
    result.push_back(found != tangent_of.end() ? found->second : zeros_like(o));
  }
  return {std::move(outputs), std::move(result)};
}

std::pair<array, array> jvp(const UnaryFn& fun, const array& primal, const array& tangent) {
  auto [outputs, tangents] =
      jvp([&fun](const std::vector<array>& x) { return std::vector<array>{fun(x[0])}; }, {primal},
          {tangent});
  return {outputs[0], tangents[0]};
}

}  // namespace mlx::core
