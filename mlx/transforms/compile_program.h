// The captured form of a compiled function: a straight-line program of primitive
// applications over numbered values (inputs, constants, step outputs).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "mlx/array.h"
#include "mlx/primitives/primitive.h"

namespace mlx::core::detail {

struct ProgramStep {
  std::shared_ptr<Primitive> primitive;
  std::vector<int> inputs;  // value indices
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  int first_output;  // the outputs are values first_output, first_output + 1, ...
};

struct Program {
  size_t num_inputs = 0;
  std::vector<Dtype> input_dtypes;
  size_t num_values = 0;
  std::vector<std::pair<int, array>> constants;  // (value index, value)
  std::vector<ProgramStep> steps;
  std::vector<int> outputs;
};

// The shape and dtype of each of a program's values (its inputs' from `inputs`, or given).
struct ValueTypes {
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  ValueTypes(const Program& program, const std::vector<array>& inputs);
  ValueTypes(const Program& program, const std::vector<Shape>& input_shapes,
             const std::vector<Dtype>& input_dtypes);
};

// The step computing each of the program's values (-1: an input or a constant).
std::vector<int> producers(const Program& program);

// Builds the program computing `outputs` from `placeholders`, simplified: no-op layout steps
// removed, common subexpressions merged, scalar constants evaluated. With `shapeless`, every
// step must be able to infer its output shapes.
Program build_program(const std::vector<array>& placeholders, const std::vector<array>& outputs,
                      bool shapeless);

// The outputs of `program` for new inputs, as a fresh lazy graph.
std::vector<array> replay(const Program& program, const std::vector<array>& inputs, bool shapeless);

}  // namespace mlx::core::detail
