// Graph evaluation: order the unevaluated part of the graph without recursion, then run each
// node on its stream (on the calling thread when a synchronous eval finds the stream idle).
#include "mlx/runtime/eval.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "mlx/memory/memory.h"
#include "mlx/primitives/primitive.h"
#include "mlx/runtime/scheduler.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// Post-order of the nodes that still need computing; one entry per sibling group.
std::vector<array> build_tape(const std::vector<array>& outputs) {
  std::vector<array> tape;
  // Fast path for evaluating one new op over computed inputs (eager, op-by-op code).
  if (outputs.size() == 1 && outputs[0].has_primitive() &&
      outputs[0].status() == array::Status::unscheduled &&
      std::none_of(outputs[0].inputs().begin(), outputs[0].inputs().end(),
                   [](const array& in) { return in.status() == array::Status::unscheduled; })) {
    tape.push_back(outputs[0]);
    return tape;
  }
  std::unordered_set<uintptr_t> seen;
  struct Frame {
    array node;
    size_t next_input;
  };
  std::vector<Frame> stack;
  auto visit = [&](const array& a) {
    if (a.status() != array::Status::unscheduled || !seen.insert(a.id()).second) {
      return;
    }
    if (!a.has_primitive()) {
      // A placeholder standing for a traced function's input: it has no value yet.
      throw std::invalid_argument(
          "[eval] Cannot evaluate an array that depends on the inputs of a function being "
          "traced by compile or vmap (e.g. item() or eval inside the function). Pass the "
          "value in as an input, or compute it outside the transformed function.");
    }
    for (auto& s : a.siblings()) {
      seen.insert(s.id());
    }
    stack.push_back(Frame{a, 0});
  };
  for (auto& o : outputs) {
    visit(o);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next_input < top.node.inputs().size()) {
        array input = top.node.inputs()[top.next_input++];
        visit(input);
      } else {
        tape.push_back(std::move(top.node));
        stack.pop_back();
      }
    }
  }
  return tape;
}

void reset_outputs(std::vector<array>& outs) {
  for (auto& o : outs) {
    o.set_status(array::Status::unscheduled);
  }
}

// Runs one node; afterwards the node forgets its inputs so they can be freed. On failure the
// outputs go back to unscheduled so that a later eval can retry.
void run_node(array& node) {
  Primitive& prim = node.primitive();
  auto& inputs = node.inputs();
  std::vector<array> outs = node.outputs();
  try {
    for (auto& in : inputs) {
      in.wait(prim.stream());
      if (in.status() != array::Status::available) {
        throw std::runtime_error(
            msg("[eval] An input of ", prim.name(), " could not be evaluated."));
      }
    }
    allocator::set_current_op(prim.name());
    if (prim.stream().device.type == Device::cpu) {
      prim.eval_cpu(inputs, outs);
    } else {
      prim.eval_gpu(inputs, outs);
    }
  } catch (...) {
    allocator::set_current_op(nullptr);
    reset_outputs(outs);
    throw;
  }
  allocator::set_current_op(nullptr);
  for (auto& o : outs) {
    o.set_status(array::Status::available);
  }
  if (!node.is_tracer()) {
    node.detach();  // a transform walks a tracer's graph after the trace
  }
}

void eval_impl(std::vector<array> outputs, bool sync) {
  std::vector<array> tape = build_tape(outputs);
  for (auto& entry : tape) {
    array node = std::move(entry);  // the tape must not keep intermediates alive
    const Stream stream = node.primitive().stream();
    std::vector<array> outs = node.outputs();
    if (sync && scheduler::is_idle(stream)) {
      Event e = scheduler::run_inline(stream, [&node] { run_node(node); });
      for (auto& o : outs) {
        o.attach_event(e);
      }
      continue;
    }
    for (auto& o : outs) {
      o.set_status(array::Status::scheduled);
    }
    scheduler::enqueue(
        stream, [node = std::move(node)]() mutable { run_node(node); },
        [&outs](Event e) {
          for (auto& o : outs) {
            o.attach_event(e);
          }
        });
  }
  if (!sync) {
    return;
  }
  for (auto& o : outputs) {
    o.wait();
    if (o.status() != array::Status::available) {
      if (o.has_primitive()) {
        scheduler::synchronize(o.primitive().stream());  // rethrows the task's error
      }
      throw std::runtime_error("[eval] An output could not be evaluated.");
    }
  }
}

}  // namespace

void eval(std::vector<array> outputs) { eval_impl(std::move(outputs), true); }

void async_eval(std::vector<array> outputs) { eval_impl(std::move(outputs), false); }

}  // namespace mlx::core
