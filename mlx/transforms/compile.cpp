// compile as graph capture: trace the function once per input signature on placeholders,
// turn the traced graph into a simplified program of primitive applications, and replay the
// program on later calls. Fusion and code generation will work on the same program.
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "mlx/export/memory_plan.h"
#include "mlx/ops.h"
#include "mlx/primitives/primitive.h"
#include "mlx/primitives/shape.h"
#include "mlx/transforms/compile_program.h"
#include "mlx/transforms/fuse.h"
#include "mlx/transforms/graph.h"
#include "mlx/transforms/matmul_epilogues.h"
#include "mlx/transforms/rematerialize.h"
#include "mlx/transforms/schedule.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

std::atomic<bool>& compile_flag() {
  static std::atomic<bool> enabled{[] {
    const char* env = std::getenv("MLX_DISABLE_COMPILE");
    return !(env && env[0] != '\0' && env[0] != '0');
  }()};
  return enabled;
}

// The inputs a trace was made for: dtypes, and shapes (ranks only when shapeless).
struct Signature {
  std::vector<Dtype> dtypes;
  std::vector<Shape> shapes;

  static Signature of(const std::vector<array>& inputs, bool shapeless) {
    Signature s;
    for (auto& in : inputs) {
      s.dtypes.push_back(in.dtype());
      s.shapes.push_back(shapeless ? Shape(in.ndim(), 0) : in.shape());
    }
    return s;
  }
  bool operator==(const Signature& o) const { return dtypes == o.dtypes && shapes == o.shapes; }
};

struct Trace {
  Signature signature;
  detail::Program program;
  detail::Program unfused;  // before fusion (for detail::UnfusedScope)
};

// Restores state arrays replaced by placeholders while fun is traced.
class StateSwap {
 public:
  StateSwap(const std::vector<array*>& state, const std::vector<array>& placeholders)
      : state_(state) {
    for (size_t i = 0; i < state.size(); ++i) {
      saved_.push_back(*state[i]);
      *state[i] = placeholders[i];
    }
  }
  ~StateSwap() {
    for (size_t i = 0; i < state_.size(); ++i) {
      *state_[i] = saved_[i];
    }
  }
  StateSwap(const StateSwap&) = delete;
  StateSwap& operator=(const StateSwap&) = delete;

 private:
  const std::vector<array*>& state_;
  std::vector<array> saved_;
};

// Whether compile lowers the program's peak (MLX_COMPILE_LOWER_PEAK: 0 never, 1 always): by
// default where it runs on a GPU, whose memory is the scarce one. On the CPU the recomputed
// kernels cost more than the memory is worth there (the main job: GELU run twice, 2.5% of the
// step's kernel time, for 22% of its peak).
bool lowers_peak(const detail::Program& program) {
  const char* env = std::getenv("MLX_COMPILE_LOWER_PEAK");  // read per trace: tests set it
  if (env && env[0] != '\0') {
    return env[0] != '0';
  }
  return !program.steps.empty() && program.steps[0].primitive->stream().device.type == Device::gpu;
}

// The program rematerialized as eval orders it, or scheduled first where that lowers the
// simulated peak clearly (each Depends node the schedule adds costs eval a node).
detail::Program lower_peak(const detail::Program& program, const std::vector<array>& inputs) {
  if (!lowers_peak(program)) {
    return program;
  }
  uint64_t peak = 0, scheduled_peak = 0;
  detail::Program kept = detail::rematerialize(program, inputs, &peak);
  detail::Program scheduled =
      detail::rematerialize(detail::schedule_for_memory(program, inputs), inputs, &scheduled_peak);
  return scheduled_peak + peak / 16 < peak ? scheduled : kept;
}

class CompiledFunction {
 public:
  CompiledFunction(ArrayFn fun, CompileOptions options)
      : fun_(std::move(fun)), options_(std::move(options)) {}

  std::vector<array> operator()(const std::vector<array>& args) {
    if (!compile_enabled()) {
      return fun_(args);
    }
    std::vector<array> inputs = with_state(args);
    const Trace& trace = trace_for(inputs, args.size());
    const detail::Program& program = detail::in_unfused_scope() ? trace.unfused : trace.program;
    std::vector<array> outputs = detail::replay(program, inputs, options_.shapeless);
    size_t num_results = outputs.size() - options_.state_outputs.size();
    for (size_t i = 0; i < options_.state_outputs.size(); ++i) {
      *options_.state_outputs[i] = outputs[num_results + i];
    }
    outputs.erase(outputs.begin() + num_results, outputs.end());
    return outputs;
  }

  MemoryPlan memory_plan(const std::vector<array>& args) {
    std::vector<array> inputs = with_state(args);
    const detail::Program& program = trace_for(inputs, args.size()).program;
    return detail::simulate_memory(program, inputs, detail::eval_order(program));
  }

 private:
  std::vector<array> with_state(const std::vector<array>& args) const {
    std::vector<array> inputs = args;
    for (array* s : options_.state_inputs) {
      inputs.push_back(*s);
    }
    return inputs;
  }

  // The trace for these inputs, captured on first use.
  const Trace& trace_for(const std::vector<array>& inputs, size_t num_args) {
    Signature sig = Signature::of(inputs, options_.shapeless);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& t : traces_) {
        if (t.signature == sig) {
          return t;
        }
      }
    }
    Trace t{sig, capture(inputs, num_args), {}};
    t.unfused = t.program;
    if (detail::fusion_enabled()) {
      t.program = detail::fuse_elementwise(detail::fuse_matmul_epilogues(t.unfused, inputs),
                                           options_.shapeless);
    }
    t.program = lower_peak(t.program, inputs);
    std::lock_guard<std::mutex> lock(mutex_);
    traces_.push_back(std::move(t));
    return traces_.back();
  }

  // The simplified program of fun for these inputs (not fused).
  detail::Program capture(const std::vector<array>& inputs, size_t num_args) {
    detail::TracingScope scope;
    detail::ShapelessScope shapeless(options_.shapeless);
    std::vector<array> placeholders;
    for (auto& in : inputs) {
      placeholders.emplace_back(in.shape(), in.dtype(), nullptr, std::vector<array>{});
      placeholders.back().set_tracer(true);
    }
    std::vector<array> outputs;
    {
      std::vector<array> state(placeholders.begin() + num_args, placeholders.end());
      StateSwap swap(options_.state_inputs, state);
      outputs = fun_(std::vector<array>(placeholders.begin(), placeholders.begin() + num_args));
      for (array* s : options_.state_outputs) {
        outputs.push_back(*s);
      }
    }
    return detail::build_program(placeholders, outputs, options_.shapeless);
  }

  ArrayFn fun_;
  CompileOptions options_;
  std::mutex mutex_;
  std::deque<Trace> traces_;  // a deque keeps programs in place while others are added
};

}  // namespace

void disable_compile() { compile_flag().store(false); }
void enable_compile() { compile_flag().store(true); }
bool compile_enabled() { return compile_flag().load(); }

namespace {
// What compile returns: memory_plan finds the compiled function through its type.
struct CompiledCall {
  std::shared_ptr<CompiledFunction> fn;
  std::vector<array> operator()(const std::vector<array>& args) const { return (*fn)(args); }
};
}  // namespace

ArrayFn compile(const ArrayFn& fun, CompileOptions options) {
  return CompiledCall{std::make_shared<CompiledFunction>(fun, std::move(options))};
}

MemoryPlan memory_plan(const ArrayFn& compiled, const std::vector<array>& args) {
  auto* call = compiled.target<CompiledCall>();
  if (!call) {
    throw std::invalid_argument("[memory_plan] The function is not a compiled function.");
  }
  return call->fn->memory_plan(args);
}

ArrayFn compile(const ArrayFn& fun, bool shapeless) {
  return compile(fun, CompileOptions{.shapeless = shapeless});
}

}  // namespace mlx::core
