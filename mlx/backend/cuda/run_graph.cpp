#include "mlx/backend/cuda/run_graph.h"

#include <functional>
#include <unordered_set>

#include "mlx/primitives/primitive.h"

namespace mlx::core::cu {

void run_graph(const std::vector<array>& results) {
  std::vector<array> order;
  std::unordered_set<uintptr_t> seen;
  std::function<void(const array&)> visit = [&](const array& a) {
    if (!a.has_primitive() || a.status() != array::Status::unscheduled ||
        !seen.insert(a.id()).second) {
      return;
    }
    for (auto& in : a.inputs()) {
      visit(in);
    }
    order.push_back(a);
  };
  for (auto& r : results) {
    visit(r);
  }
  for (auto& slot : order) {
    array node = std::move(slot);  // the last reference here: readers of it keep it alive
    std::vector<array> outs = node.outputs();
    node.primitive().eval_gpu(node.inputs(), outs);
    for (auto& o : outs) {
      o.set_status(array::Status::available);
    }
    node.detach();
  }
}

void run_graph_into(const std::vector<array>& results, std::vector<array>& outputs) {
  run_graph(results);
  for (size_t j = 0; j < outputs.size(); ++j) {
    outputs[j].copy_shared_buffer(results[j]);
  }
}

}  // namespace mlx::core::cu
