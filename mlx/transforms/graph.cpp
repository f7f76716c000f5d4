#include "mlx/transforms/graph.h"

#include "mlx/ops/creation.h"
#include "mlx/primitives/transform.h"

namespace mlx::core::detail {

namespace {

// How many leading inputs of `node` the walk follows.
size_t inputs_to_follow(const array& node, Walk walk) {
  if (walk == Walk::capture) {
    return node.inputs().size();
  }
  Primitive& p = node.primitive();
  if (walk == Walk::differentiate && dynamic_cast<StopGradient*>(&p)) {
    return 0;
  }
  // Inputs that only lend their shapes (shapeless traces) carry no derivative: following them
  // would differentiate what a constant operand feeds (log(x) for a constant exponent, NaN).
  if (walk == Walk::differentiate &&
      (dynamic_cast<DynamicBroadcast*>(&p) || dynamic_cast<DynamicUnbroadcast*>(&p))) {
    return 1;
  }
  if (walk == Walk::differentiate && dynamic_cast<NumberOfElements*>(&p)) {
    return 0;
  }
  if (auto* custom = dynamic_cast<CustomTransforms*>(&p)) {
    return custom->num_primals();
  }
  return node.inputs().size();
}

}  // namespace

std::vector<array> dependent_tape(const std::vector<array>& outputs, const IdSet& sources,
                                  Walk walk) {
  std::vector<array> tape;
  IdSet visited;
  IdSet dependent(sources);
  struct Frame {
    array node;
    size_t next_input;
    size_t num_inputs;
  };
  std::vector<Frame> stack;
  auto visit = [&](const array& a) {
    if (!visited.insert(a.id()).second) {
      return;
    }
    if (a.has_siblings()) {
      for (auto& s : a.outputs()) {
        visited.insert(s.id());
      }
    }
    if (!sources.count(a.id()) && a.has_primitive()) {
      stack.push_back(Frame{a, 0, inputs_to_follow(a, walk)});
    }
  };
  for (auto& o : outputs) {
    visit(o);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next_input < top.num_inputs) {
        array input = top.node.inputs()[top.next_input++];
        visit(input);
        continue;
      }
      array node = std::move(top.node);
      size_t followed = top.num_inputs;
      stack.pop_back();
      // A capture keeps what communicates even when it reads no source (compile replays it).
      bool depends = walk == Walk::capture && node.primitive().has_side_effects();
      for (size_t i = 0; i < followed; ++i) {
        depends = depends || dependent.count(node.inputs()[i].id());
      }
      if (depends) {
        dependent.insert(node.id());
        if (node.has_siblings()) {
          for (auto& s : node.outputs()) {
            dependent.insert(s.id());
          }
        }
        tape.push_back(std::move(node));
      }
    }
  }
  return tape;
}

array trace_source(const array& x) {
  if (x.is_tracer() || x.status() != array::Status::available) {
    return copy(x);
  }
  array alias(x.shape(), x.dtype(), nullptr, {});
  alias.attach_event(x.event());  // device work still producing x is waited for through it
  alias.copy_shared_buffer(x);
  return alias;
}

}  // namespace mlx::core::detail
