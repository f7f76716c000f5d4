// Graph evaluation: claim the unevaluated part of the graph (ordered without recursion), then
// run each node on its stream (on the calling thread when a synchronous eval finds the stream
// caught up). Several threads may evaluate overlapping graphs at once.
#include "mlx/runtime/eval.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include "mlx/memory/memory.h"
#include "mlx/memory/trace.h"
#include "mlx/primitives/primitive.h"
#include "mlx/runtime/kernel_counter.h"
#include "mlx/runtime/scheduler.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// Post-order of the nodes that still need computing; one entry per sibling group.
std::vector<array> build_tape(const std::vector<array>& outputs) {
  std::vector<array> tape;
  // Fast path for evaluating one new op over computed inputs (eager, op-by-op code).
  // The status first: an evaluated node's primitive may be being dropped by a worker.
  if (outputs.size() == 1 && outputs[0].status() == array::Status::unscheduled &&
      outputs[0].has_primitive() &&
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
    if (a.has_siblings()) {
      for (auto& s : a.outputs()) {
        seen.insert(s.id());
      }
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

// Runs one node; afterwards the node forgets its inputs so they can be freed (unless a
// transform traced it and walks its graph afterwards). On failure the outputs are marked
// failed with the error, which every later evaluation that needs them raises again. They are
// never claimed again: a consumer claimed before the failure may still be about to wait for
// them, and a new claim would give it a wait forward in time (a deadlock across streams).
void run_node(array& node, bool keep_graph) {
  Primitive& prim = node.primitive();
  const auto& inputs = node.inputs();
  std::vector<array> outs = node.outputs();
  // One more reference to each input keeps its buffer from being donated to an output: while
  // another output still reads it (see Primitive::donates_across_outputs), or while a
  // transform's trace keeps the graph, whose vjp rules read the inputs' values afterwards
  // (mx.eval inside a function being differentiated).
  std::vector<array> pinned;
  if (keep_graph || (outs.size() > 1 && !prim.donates_across_outputs())) {
    pinned = inputs;
  }
  try {
    for (auto& in : inputs) {
      in.wait(prim.stream());
      if (in.status() == array::Status::failed) {
        std::rethrow_exception(in.error());
      }
      if (in.status() != array::Status::available) {
        throw std::runtime_error(
            msg("[eval] An input of ", prim.name(), " could not be evaluated."));
      }
    }
    // What the allocator records as the op that asked (one thread-local store).
    allocator::OpContext op{prim.name(), &prim, prim.stream().index};
    allocator::set_current_op(&op);
    const bool timed = detail::kernel_timing();
    const auto start =
        timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (prim.stream().device.type == Device::cpu) {
      prim.eval_cpu(inputs, outs);
    } else {
      prim.eval_gpu(inputs, outs);
      if (timed) {
        scheduler::device_synchronize(prim.stream());
      }
    }
    if (detail::kernel_counting()) {
      detail::count_kernel(
          prim.name(), inputs,
          timed ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                : 0.0);
    }
  } catch (...) {
    allocator::set_current_op(nullptr);
    for (auto& o : outs) {
      o.set_failed(std::current_exception());
    }
    if (!keep_graph) {
      node.detach();
    }
    throw;
  }
  allocator::set_current_op(nullptr);
  for (auto& o : outs) {
    o.set_status(array::Status::available);
  }
  if (!keep_graph) {
    node.detach();
  }
}

// A node this evaluation owns: it runs at `position` of its stream.
struct Claimed {
  array node;
  Stream stream;
  uint64_t position;
  bool keep_graph;
};

// Serializes the claims of concurrent evaluations (see "One graph, several threads").
std::mutex& graph_mutex() {
  static auto* m = new std::mutex();  // leaked: arrays may be evaluated during static destruction
  return *m;
}

// Orders the unevaluated part of the graph and claims it in one critical section: every node
// is marked scheduled with its stream position (and event) reserved. So the nodes a thread
// claims depend only on nodes claimed before, by it or by another thread, and every stream
// runs its positions in claim order: all waits point back in time.
std::vector<Claimed> claim(const std::vector<array>& outputs, bool keep_traced) {
  std::lock_guard<std::mutex> lock(graph_mutex());
  std::vector<array> tape = build_tape(outputs);
  std::vector<Claimed> claimed;
  claimed.reserve(tape.size());
  for (auto& node : tape) {
    Stream stream = node.primitive().stream();
    uint64_t position = scheduler::reserve(stream);
    Event e(stream, position);
    auto schedule = [&e](array& o) {
      o.attach_event(e);  // before the status: readers load the status first
      o.set_status(array::Status::scheduled);
    };
    if (node.has_siblings()) {
      for (auto& o : node.outputs()) {
        schedule(o);
      }
    } else {
      schedule(node);  // outputs() would allocate a vector of one
    }
    // Tracing is per thread: decided here, not on a worker.
    bool keep_graph = keep_traced && node.is_tracer();
    claimed.push_back(Claimed{std::move(node), stream, position, keep_graph});
  }
  return claimed;
}

// The first error of one synchronous evaluation's nodes (rethrown by that evaluation only).
struct ErrorSlot {
  std::mutex mutex;
  std::exception_ptr error;
  void set(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error) {
      error = std::move(e);
    }
  }
  std::exception_ptr get() {
    std::lock_guard<std::mutex> lock(mutex);
    return error;
  }
};

// An asynchronous evaluation hands its nodes over in runs of one stream, each run at once.
void submit_all(std::vector<Claimed> tape) {
  if (tape.empty()) {
    return;
  }
  std::vector<std::pair<uint64_t, scheduler::Task>> run;
  Stream stream = tape.front().stream;
  for (auto& entry : tape) {
    Claimed c = std::move(entry);  // the tape must not keep intermediates alive
    if (c.stream != stream) {
      scheduler::submit(stream, std::move(run));
      run.clear();
      stream = c.stream;
    }
    // The stream keeps the error of a failed node.
    run.emplace_back(c.position, [node = std::move(c.node), keep = c.keep_graph]() mutable {
      run_node(node, keep);
    });
  }
  if (!run.empty()) {
    scheduler::submit(stream, std::move(run));
  }
}

void eval_impl(const std::vector<array>& outputs, bool sync, bool keep_traced = true) {
  std::vector<Claimed> tape = claim(outputs, keep_traced);
  if (!sync) {
    submit_all(std::move(tape));
    return;
  }
  std::exception_ptr inline_error;    // the first error of a node run here
  std::shared_ptr<ErrorSlot> errors;  // of the nodes given to workers (made on need)
  // Every claimed position must be handed off, even after a failure (the stream would stop
  // there otherwise): nodes after a failed one still run, and those that need it fail.
  for (auto& entry : tape) {
    Claimed c = std::move(entry);  // the tape must not keep intermediates alive
    bool ran;
    try {
      ran = scheduler::run_inline_if_next(c.stream, c.position,
                                          [&c] { run_node(c.node, c.keep_graph); });
    } catch (...) {
      if (!inline_error) {
        inline_error = std::current_exception();
      }
      ran = true;
    }
    if (ran) {
      continue;
    }
    if (!errors) {
      errors = std::make_shared<ErrorSlot>();
    }
    scheduler::submit(c.stream, c.position,
                      [node = std::move(c.node), keep = c.keep_graph, errors]() mutable {
                        try {
                          run_node(node, keep);
                        } catch (...) {
                          errors->set(std::current_exception());
                        }
                      });
  }
  for (auto& o : outputs) {
    o.wait();
  }
  if (inline_error) {
    std::rethrow_exception(inline_error);
  }
  if (auto e = errors ? errors->get() : nullptr) {
    std::rethrow_exception(e);
  }
  for (auto& o : outputs) {
    if (o.status() == array::Status::failed) {
      std::rethrow_exception(o.error());  // failed here before, or in another evaluation
    }
    if (o.status() != array::Status::available) {
      throw std::runtime_error("[eval] An output could not be evaluated.");
    }
  }
}

}  // namespace

void eval(std::vector<array> outputs) { eval_impl(outputs, true); }

void async_eval(std::vector<array> outputs) { eval_impl(outputs, false); }

void detail::async_eval_untraced(std::vector<array> outputs) {
  eval_impl(outputs, false, /*keep_traced=*/false);
}

}  // namespace mlx::core
