// Compiled::eval_gpu: a fused region on the GPU, run op by op. The region is expanded into its
// elementwise primitives (Compiled::expand) and each runs its own GPU kernel on this stream, in
// an order where every op follows its operands, so the results are the unfused graph's bit for
// bit. An intermediate is freed once its last reader has run, as in the unfused graph. (The
// generated single-kernel form is the GPU half of transforms/fuse.cpp still to come; until then
// compile fuses GPU regions only under MLX_COMPILE_FUSE_GPU=1.)
#include "mlx/primitives/compiled.h"

#include <functional>
#include <unordered_set>

namespace mlx::core {

void Compiled::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  std::vector<array> results = expand(inputs);
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
  for (size_t j = 0; j < outputs.size(); ++j) {
    outputs[j].copy_shared_buffer(results[j]);
  }
}

}  // namespace mlx::core
