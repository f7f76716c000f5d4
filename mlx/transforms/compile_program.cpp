#include "mlx/transforms/compile_program.h"

#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "mlx/primitives/compiled.h"
#include "mlx/primitives/shape.h"
#include "mlx/runtime/eval.h"
#include "mlx/transforms/graph.h"
#include "mlx/utils.h"

namespace mlx::core::detail {

namespace {

// A step whose output is its input: layout changes to the same shape, identity
// permutations, same-dtype conversions and copies of copies.
bool is_noop(const array& node, const Program& program, const std::vector<int>& producer,
             int input_value, bool shapeless) {
  if (node.inputs().size() != 1 || node.has_siblings()) {
    return false;
  }
  const array& in = node.inputs()[0];
  Primitive& p = node.primitive();
  if (in.dtype() != node.dtype()) {
    return false;
  }
  if (dynamic_cast<AsType*>(&p)) {
    return true;
  }
  if (dynamic_cast<Transpose*>(&p)) {
    auto& axes = static_cast<Transpose&>(p).axes();
    for (size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] != static_cast<int>(i)) {
        return false;
      }
    }
    return true;
  }
  if (!shapeless && in.shape() == node.shape() &&
      (dynamic_cast<Broadcast*>(&p) || dynamic_cast<Reshape*>(&p))) {
    return true;
  }
  if (dynamic_cast<Copy*>(&p) && input_value >= 0 && producer[input_value] >= 0) {
    const ProgramStep& source = program.steps[producer[input_value]];
    return dynamic_cast<Copy*>(source.primitive.get()) != nullptr;
  }
  return false;
}

std::string cse_key(const array& node, const std::vector<int>& inputs) {
  std::string key = node.primitive().name();
  for (int i : inputs) {
    key += ',';
    key += std::to_string(i);
  }
  return key;
}

bool same_outputs(const ProgramStep& step, const std::vector<array>& outs) {
  if (step.shapes.size() != outs.size()) {
    return false;
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    if (step.shapes[k] != outs[k].shape() || step.dtypes[k] != outs[k].dtype()) {
      return false;
    }
  }
  return true;
}

void check_shapeless(const array& node) {
  std::vector<Shape> inferred;
  try {
    inferred = node.primitive().output_shapes(node.inputs());
  } catch (const std::exception& e) {
    throw std::invalid_argument(msg("[compile] Shapeless compilation cannot replay ",
                                    node.primitive().name(), " on new shapes: ", e.what(),
                                    " Compile with shapeless=false."));
  }
  std::vector<array> outs = node.outputs();
  for (size_t k = 0; k < outs.size(); ++k) {
    if (k >= inferred.size() || inferred[k] != outs[k].shape()) {
      throw std::logic_error(msg("[compile] ", node.primitive().name(),
                                 " infers output shapes that differ from its traced outputs."));
    }
  }
}

}  // namespace

Program build_program(const std::vector<array>& placeholders, const std::vector<array>& outputs,
                      bool shapeless) {
  Program program;
  program.num_inputs = placeholders.size();
  std::unordered_map<uintptr_t, int> value_of;
  IdSet sources;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    value_of[placeholders[i].id()] = static_cast<int>(i);
    program.input_dtypes.push_back(placeholders[i].dtype());
    sources.insert(placeholders[i].id());
  }
  int next = static_cast<int>(placeholders.size());
  std::vector<int> producer(next, -1);  // step index that computes each value
  std::vector<array> pending_constants;

  auto value = [&](const array& a) {
    auto found = value_of.find(a.id());
    if (found != value_of.end()) {
      return found->second;
    }
    // A constant: computed now (folded), once, unless it belongs to an enclosing trace.
    if (a.has_primitive() && a.status() == array::Status::unscheduled && !a.is_tracer()) {
      pending_constants.push_back(a);
    }
    program.constants.emplace_back(next, a);
    producer.push_back(-1);
    value_of[a.id()] = next;
    return next++;
  };

  std::unordered_map<std::string, std::vector<int>> steps_by_key;
  for (auto& node : dependent_tape(outputs, sources, Walk::capture)) {
    std::vector<int> inputs;
    for (auto& in : node.inputs()) {
      inputs.push_back(value(in));
    }
    std::vector<array> outs = node.outputs();
    if (is_noop(node, program, producer, inputs.empty() ? -1 : inputs[0], shapeless)) {
      value_of[node.id()] = inputs[0];
      continue;
    }
    std::string key = cse_key(node, inputs);
    bool merged = false;
    for (int candidate : steps_by_key[key]) {
      const ProgramStep& other = program.steps[candidate];
      if (other.primitive->is_equivalent(node.primitive()) && same_outputs(other, outs)) {
        for (size_t k = 0; k < outs.size(); ++k) {
          value_of[outs[k].id()] = other.first_output + static_cast<int>(k);
        }
        merged = true;
        break;
      }
    }
    if (merged) {
      continue;
    }
    if (shapeless) {
      check_shapeless(node);
    }
    ProgramStep step{node.primitive_ptr(), std::move(inputs), {}, {}, next};
    for (auto& o : outs) {
      step.shapes.push_back(o.shape());
      step.dtypes.push_back(o.dtype());
      value_of[o.id()] = next++;
      producer.push_back(static_cast<int>(program.steps.size()));
    }
    steps_by_key[key].push_back(static_cast<int>(program.steps.size()));
    program.steps.push_back(std::move(step));
  }
  for (auto& o : outputs) {
    program.outputs.push_back(value(o));
  }
  program.num_values = next;
  eval(pending_constants);
  return program;
}

namespace {
std::vector<Shape> shapes_of(const std::vector<array>& arrays) {
  std::vector<Shape> out;
  for (auto& a : arrays) {
    out.push_back(a.shape());
  }
  return out;
}
std::vector<Dtype> dtypes_of(const std::vector<array>& arrays) {
  std::vector<Dtype> out;
  for (auto& a : arrays) {
    out.push_back(a.dtype());
  }
  return out;
}
}  // namespace

std::vector<int> producers(const Program& program) {
  std::vector<int> producer(program.num_values, -1);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ProgramStep& step = program.steps[s];
    for (size_t k = 0; k < step.shapes.size(); ++k) {
      producer[step.first_output + k] = static_cast<int>(s);
    }
  }
  return producer;
}

ValueTypes::ValueTypes(const Program& program, const std::vector<array>& inputs)
    : ValueTypes(program, shapes_of(inputs), dtypes_of(inputs)) {}

ValueTypes::ValueTypes(const Program& program, const std::vector<Shape>& input_shapes,
                       const std::vector<Dtype>& input_dtypes)
    : shapes(program.num_values), dtypes(program.num_values, float32) {
  for (size_t i = 0; i < input_shapes.size() && i < program.num_inputs; ++i) {
    shapes[i] = input_shapes[i];
    dtypes[i] = input_dtypes[i];
  }
  for (auto& [v, c] : program.constants) {
    shapes[v] = c.shape();
    dtypes[v] = c.dtype();
  }
  for (auto& step : program.steps) {
    for (size_t k = 0; k < step.shapes.size(); ++k) {
      shapes[step.first_output + k] = step.shapes[k];
      dtypes[step.first_output + k] = step.dtypes[k];
    }
  }
}

std::vector<array> replay(const Program& program, const std::vector<array>& inputs,
                          bool shapeless) {
  std::vector<std::optional<array>> values(program.num_values);
  for (size_t i = 0; i < inputs.size(); ++i) {
    values[i] = inputs[i];
  }
  for (auto& [index, constant] : program.constants) {
    values[index] = constant;
  }
  for (auto& step : program.steps) {
    std::vector<array> step_inputs;
    step_inputs.reserve(step.inputs.size());
    for (int i : step.inputs) {
      step_inputs.push_back(*values[i]);
    }
    // A fused region whose outputs no longer share one shape runs as its unfused ops.
    auto* fused = dynamic_cast<Compiled*>(step.primitive.get());
    if (shapeless && fused && !fused->uniform(step_inputs)) {
      auto outs = fused->expand(step_inputs);
      for (size_t k = 0; k < outs.size(); ++k) {
        values[step.first_output + k] = std::move(outs[k]);
      }
      continue;
    }
    std::vector<Shape> shapes =
        shapeless ? step.primitive->output_shapes(step_inputs) : step.shapes;
    if (shapes.size() == 1) {
      values[step.first_output] =
          array(std::move(shapes[0]), step.dtypes[0], step.primitive, std::move(step_inputs));
    } else {
      auto outs = array::make_arrays(std::move(shapes), step.dtypes, step.primitive, step_inputs);
      for (size_t k = 0; k < outs.size(); ++k) {
        values[step.first_output + k] = std::move(outs[k]);
      }
    }
  }
  std::vector<array> outputs;
  for (int o : program.outputs) {
    outputs.push_back(*values[o]);
  }
  return outputs;
}

}  // namespace mlx::core::detail
