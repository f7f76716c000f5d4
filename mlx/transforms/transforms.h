// Function transforms: reverse- and forward-mode differentiation, vectorization, custom rules,
// gradient checkpointing and graph capture (compile). Functions take and return arrays; every
// transform returns ordinary lazy arrays, so transforms compose freely.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {

using ArrayFn = std::function<std::vector<array>(const std::vector<array>&)>;
using ScalarFn = std::function<array(const std::vector<array>&)>;
using UnaryFn = std::function<array(const array&)>;

// Reverse mode: the outputs of fun(primals) and the vector-Jacobian products for the given
// output cotangents (one per output, with the output's shape).
std::pair<std::vector<array>, std::vector<array>> vjp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents);
std::pair<array, array> vjp(const UnaryFn& fun, const array& primal, const array& cotangent);

// Forward mode: the outputs of fun(primals) and the Jacobian-vector products for the given
// input tangents (one per primal, with the primal's shape).
std::pair<std::vector<array>, std::vector<array>> jvp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& tangents);
std::pair<array, array> jvp(const UnaryFn& fun, const array& primal, const array& tangent);

// value_and_grad(fun, argnums)(inputs) = (fun(inputs), d out[0] / d inputs[argnums]). The first
// output must be a scalar; further outputs are auxiliary values returned but not
// differentiated.
using ValueAndGradFn =
    std::function<std::pair<std::vector<array>, std::vector<array>>(const std::vector<array>&)>;
using SimpleValueAndGradFn =
    std::function<std::pair<array, std::vector<array>>(const std::vector<array>&)>;

ValueAndGradFn value_and_grad(const ArrayFn& fun, const std::vector<int>& argnums);
ValueAndGradFn value_and_grad(const ArrayFn& fun, int argnum = 0);
SimpleValueAndGradFn value_and_grad(const ScalarFn& fun, const std::vector<int>& argnums);
SimpleValueAndGradFn value_and_grad(const ScalarFn& fun, int argnum = 0);
std::function<std::pair<array, array>(const array&)> value_and_grad(const UnaryFn& fun);

std::function<std::vector<array>(const std::vector<array>&)> grad(const ScalarFn& fun,
                                                                  const std::vector<int>& argnums);
std::function<std::vector<array>(const std::vector<array>&)> grad(const ScalarFn& fun,
                                                                  int argnum = 0);
UnaryFn grad(const UnaryFn& fun);

// Vectorizes fun over an axis of its inputs. in_axes[i] is the mapped axis of input i, or -1
// when input i is not mapped (an empty list maps axis 0 of every input); out_axes[j] is where
// the mapped axis goes in output j (empty: 0 for every output).
ArrayFn vmap(const ArrayFn& fun, const std::vector<int>& in_axes = {},
             const std::vector<int>& out_axes = {});
UnaryFn vmap(const UnaryFn& fun, int in_axis = 0, int out_axis = 0);
std::function<array(const array&, const array&)> vmap(
    const std::function<array(const array&, const array&)>& fun, int in_axis_a = 0,
    int in_axis_b = 0, int out_axis = 0);

// Custom rules. A vjp rule gets (primals, cotangents, outputs) and returns one cotangent per
// primal; a jvp rule gets (primals, tangents, argnums) with one tangent per entry of argnums
// and returns one tangent per output; a vmap rule gets (inputs, axes) and returns
// (outputs, output axes). Transforms without a custom rule use fun's own graph.
using CustomVJPFn = std::function<std::vector<array>(
    const std::vector<array>&, const std::vector<array>&, const std::vector<array>&)>;
using CustomJVPFn = std::function<std::vector<array>(
    const std::vector<array>&, const std::vector<array>&, const std::vector<int>&)>;
using CustomVmapFn = std::function<std::pair<std::vector<array>, std::vector<int>>(
    const std::vector<array>&, const std::vector<int>&)>;

ArrayFn custom_function(const ArrayFn& fun, std::optional<CustomVJPFn> fun_vjp = std::nullopt,
                        std::optional<CustomJVPFn> fun_jvp = std::nullopt,
                        std::optional<CustomVmapFn> fun_vmap = std::nullopt);
ArrayFn custom_vjp(const ArrayFn& fun, const CustomVJPFn& fun_vjp);

// Gradient checkpointing: fun's intermediates are not kept for the backward pass; the vjp
// recomputes fun from its inputs once the output cotangents are known.
ArrayFn checkpoint(const ArrayFn& fun);

// Graph capture. The returned function traces fun once per input signature (dtypes and
// shapes; with shapeless=true only dtypes and ranks), simplifies the captured graph and
// replays it on later calls. `state_inputs` are arrays fun reads besides its arguments and
// `state_outputs` arrays it assigns (e.g. model parameters and optimizer state): each call
// passes their current values in and writes the new values back, so the trace stays valid
// when they change.
struct CompileOptions {
  bool shapeless = false;
  std::vector<array*> state_inputs;
  std::vector<array*> state_outputs;
};
ArrayFn compile(const ArrayFn& fun, bool shapeless = false);
ArrayFn compile(const ArrayFn& fun, CompileOptions options);

// The memory plan of a compiled function for these arguments (traced if needed, not run):
// what one call allocates and when, as eval runs it.
struct MemoryPlan {
  uint64_t peak_bytes = 0;   // bytes in use at the peak, the held inputs included
  uint64_t input_bytes = 0;  // arguments, state and captured constants (held throughout)
  int64_t num_allocations = 0;
  uint64_t allocated_bytes = 0;
  // (step, the step whose buffer it writes in place)
  std::vector<std::pair<std::string, std::string>> reused_in_place;
  std::string peak_step;                  // the step that runs at the peak
  std::vector<std::string> live_at_peak;  // steps whose outputs are alive then, largest first
  std::vector<uint64_t> live_bytes_at_peak;
};
MemoryPlan memory_plan(const ArrayFn& compiled, const std::vector<array>& args);

// Compiled functions run their function directly (no capture) while compilation is disabled.
// MLX_DISABLE_COMPILE=1 in the environment disables it from the start.
void disable_compile();
void enable_compile();
bool compile_enabled();

namespace detail {

// Marks the lifetime of a trace: arrays derived from tracers are tracers while one is alive.
class TracingScope {
 public:
  TracingScope();
  ~TracingScope();
  TracingScope(const TracingScope&) = delete;
  TracingScope& operator=(const TracingScope&) = delete;
};

// True while more than one transform traces on this thread (this one inside another).
bool in_nested_tracing();

// Where the outermost vjp computes the forward while it builds the backward graph: on GPU
// streams by default (the host's build then hides behind device work; on the CPU the same
// cores would do both), everywhere, or nowhere. MLX_VJP_OVERLAP=1 / 0 sets always / never.
enum class VjpOverlap { gpu, always, never };
void set_vjp_overlap(VjpOverlap mode);

// Marks a shapeless compile trace: ops whose results depend on input shapes build nodes that
// recompute them from the shapes of their inputs (e.g. broadcasting against each other).
class ShapelessScope {
 public:
  explicit ShapelessScope(bool active);
  ~ShapelessScope();
  ShapelessScope(const ShapelessScope&) = delete;
  ShapelessScope& operator=(const ShapelessScope&) = delete;

 private:
  bool active_;
};
bool in_shapeless_tracing();

// While one is alive (on this thread), compiled functions replay their programs unfused:
// export traces through them and writes ordinary primitives, which an importer can check.
class UnfusedScope {
 public:
  UnfusedScope();
  ~UnfusedScope();
  UnfusedScope(const UnfusedScope&) = delete;
  UnfusedScope& operator=(const UnfusedScope&) = delete;
};
bool in_unfused_scope();

// vjp with an explicit choice of the primals to differentiate (the others are constants).
// Empty `cotangents` means ones for every output.
std::pair<std::vector<array>, std::vector<array>> vjp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents,
                                                      const std::vector<int>& argnums);

}  // namespace detail

}  // namespace mlx::core
