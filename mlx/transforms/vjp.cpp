// Reverse mode: trace the function on identity copies of the primals, copy the traced nodes
// between them and the outputs (the tape), and apply each node's vjp rule from the outputs
// back; the outermost vjp computes the forward meanwhile.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "mlx/ops.h"
#include "mlx/primitives/primitive.h"
#include "mlx/runtime/eval.h"
#include "mlx/transforms/cotangent_sum.h"
#include "mlx/transforms/graph.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace detail {

namespace {

// Adds `value` to the cotangent accumulated for `key` (cotangent_sum.h).
void accumulate(std::unordered_map<uintptr_t, array>& cotangents, uintptr_t key, array value) {
  auto it = cotangents.find(key);
  if (it == cotangents.end()) {
    cotangents.emplace(key, std::move(value));
  } else {
    it->second = add_cotangents(it->second, value);
  }
}

void check_cotangents(const std::vector<array>& outputs, const std::vector<array>& cotangents) {
  if (outputs.size() != cotangents.size()) {
    throw std::invalid_argument(msg("[vjp] The function has ", outputs.size(), " outputs but ",
                                    cotangents.size(), " cotangents were given."));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].shape() != cotangents[i].shape()) {
      throw std::invalid_argument(msg("[vjp] Output ", i, " has shape ", outputs[i].shape(),
                                      " but its cotangent has shape ", cotangents[i].shape(), "."));
    }
  }
}

// What the rules read of a traced node, copied: the forward may be computed (its nodes
// dropping their inputs) while the backward graph is built.
struct TapeEntry {
  std::shared_ptr<Primitive> primitive;
  std::vector<array> inputs;
  std::vector<array> outputs;
};

std::vector<TapeEntry> copy_tape(const std::vector<array>& tape) {
  std::vector<TapeEntry> entries;
  entries.reserve(tape.size());
  for (const auto& node : tape) {
    entries.push_back(TapeEntry{node.primitive_ptr(), node.inputs(), node.outputs()});
  }
  return entries;
}

VjpOverlap initial_overlap() {
  const char* env = std::getenv("MLX_VJP_OVERLAP");
  if (env == nullptr) {
    return VjpOverlap::gpu;
  }
  return std::string(env) == "0" ? VjpOverlap::never : VjpOverlap::always;
}

std::atomic<VjpOverlap>& overlap_mode() {
  static std::atomic<VjpOverlap> mode{initial_overlap()};
  return mode;
}

// The outermost transform starts computing the forward once it has copied the tape: the
// host's time building the backward graph (milliseconds for a Transformer step) then overlaps
// the device's forward instead of preceding it, and each entry, dropped once its rule ran,
// holds the forward's intermediates only until then. Inside another transform the forward
// may hang on placeholders (compile, vmap), which have no value, and its graph belongs to the
// outer trace.
bool overlaps_forward(const std::vector<array>& outputs) {
  if (in_nested_tracing()) {
    return false;
  }
  switch (overlap_mode().load(std::memory_order_relaxed)) {
    case VjpOverlap::always:
      return true;
    case VjpOverlap::never:
      return false;
    case VjpOverlap::gpu:
      break;
  }
  return std::any_of(outputs.begin(), outputs.end(), [](const array& o) {
    return o.has_primitive() && o.primitive().stream().device.type == Device::gpu;
  });
}

}  // namespace

void set_vjp_overlap(VjpOverlap mode) { overlap_mode().store(mode, std::memory_order_relaxed); }

std::pair<std::vector<array>, std::vector<array>> vjp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents,
                                                      const std::vector<int>& argnums) {
  TracingScope scope;
  std::vector<array> traced = primals;
  IdSet sources;
  for (int i : argnums) {
    traced[i] = trace_source(primals[i]);
    traced[i].set_tracer(true);
    sources.insert(traced[i].id());
  }
  std::vector<array> outputs = fun(traced);
  std::vector<array> seeds = cotangents;
  if (seeds.empty()) {
    for (auto& o : outputs) {
      seeds.push_back(ones_like(o));
    }
  }
  check_cotangents(outputs, seeds);

  std::vector<TapeEntry> tape = copy_tape(dependent_tape(outputs, sources, Walk::differentiate));
  if (overlaps_forward(outputs)) {
    async_eval_untraced(outputs);
  }
  IdSet differentiable(sources);
  for (auto& entry : tape) {
    for (auto& o : entry.outputs) {
      differentiable.insert(o.id());
    }
  }

  std::unordered_map<uintptr_t, array> cotangent_of;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (differentiable.count(outputs[i].id()) && is_inexact(outputs[i].dtype())) {
      accumulate(cotangent_of, outputs[i].id(), astype(seeds[i], outputs[i].dtype()));
    }
  }

  for (auto it = tape.rbegin(); it != tape.rend(); ++it) {
    TapeEntry entry = std::move(*it);  // released once its rule ran
    std::vector<array> node_cotangents;
    bool any = false;
    for (auto& o : entry.outputs) {
      auto found = cotangent_of.find(o.id());
      if (found != cotangent_of.end()) {
        node_cotangents.push_back(std::move(found->second));
        cotangent_of.erase(found);
        any = true;
      } else {
        node_cotangents.push_back(zeros_like(o));
      }
    }
    if (!any) {
      continue;
    }
    const std::vector<array>& inputs = entry.inputs;
    std::vector<int> input_argnums;
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (differentiable.count(inputs[j].id()) && is_inexact(inputs[j].dtype())) {
        input_argnums.push_back(static_cast<int>(j));
      }
    }
    if (input_argnums.empty()) {
      continue;
    }
    std::vector<array> input_cotangents =
        entry.primitive->vjp(inputs, node_cotangents, input_argnums, entry.outputs);
    if (input_cotangents.size() != input_argnums.size()) {
      throw std::logic_error(msg("[vjp] The rule of ", entry.primitive->name(), " returned ",
                                 input_cotangents.size(), " cotangents for ", input_argnums.size(),
                                 " inputs."));
    }
    for (size_t k = 0; k < input_argnums.size(); ++k) {
      const array& in = inputs[input_argnums[k]];
      accumulate(cotangent_of, in.id(), astype(input_cotangents[k], in.dtype()));
    }
  }

  std::vector<array> result;
  result.reserve(argnums.size());
  for (int i : argnums) {
    auto found = cotangent_of.find(traced[i].id());
    result.push_back(found != cotangent_of.end() ? found->second : zeros_like(primals[i]));
  }
  return {std::move(outputs), std::move(result)};
}

}  // namespace detail

std::pair<std::vector<array>, std::vector<array>> vjp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents) {
  std::vector<int> argnums;
  for (size_t i = 0; i < primals.size(); ++i) {
    if (is_inexact(primals[i].dtype())) {
      argnums.push_back(static_cast<int>(i));
    }
  }
  auto checked = [&](const std::vector<array>& x) {
    std::vector<array> outs = fun(x);
    detail::check_cotangents(outs, cotangents);
    return outs;
  };
  auto [outputs, partial] = detail::vjp(checked, primals, cotangents, argnums);
  // Integer primals are constants: their cotangents are zero.
  std::vector<array> all;
  size_t k = 0;
  for (size_t i = 0; i < primals.size(); ++i) {
    if (k < argnums.size() && argnums[k] == static_cast<int>(i)) {
      all.push_back(std::move(partial[k++]));
    } else {
      all.push_back(zeros_like(primals[i]));
    }
  }
  return {std::move(outputs), std::move(all)};
}

std::pair<array, array> vjp(const UnaryFn& fun, const array& primal, const array& cotangent) {
  auto [outputs, cotangents] =
      vjp([&fun](const std::vector<array>& x) { return std::vector<array>{fun(x[0])}; }, {primal},
          {cotangent});
  return {outputs[0], cotangents[0]};
}

}  // namespace mlx::core
