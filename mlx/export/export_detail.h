// Internals of export: one trace of a function and a read file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mlx/export/export.h"
#include "mlx/transforms/compile_program.h"

namespace mlx::core::detail {

struct ExportedTrace {
  bool shapeless = false;
  bool chained = false;  // steps run in stored order (the memory plan's)
  size_t num_args = 0;
  std::vector<std::string> keyword_names;  // sorted; their inputs follow the positional ones
  std::vector<Dtype> dtypes;
  std::vector<Shape> shapes;
  Program program;
};

struct ImportedFile {
  std::string metadata;
  std::vector<ExportedTrace> traces;
};

ExportedTrace trace_program(const ExportFn& fun, const Args& args, const Kwargs& kwargs,
                            bool shapeless);
// Orders the steps by the memory plan and marks the trace chained.
void optimize_memory(ExportedTrace& t);
void write_export_file(const std::string& file, const std::string& metadata,
                       const std::vector<std::shared_ptr<ExportedTrace>>& traces);
// Reads and validates every field; throws std::runtime_error naming the problem.
std::shared_ptr<ImportedFile> read_export_file(const std::string& file);
// Inserts Depends steps so that eval runs the steps in stored order.
void chain_steps(ExportedTrace& t);
// Inserts Copy steps before the inputs that kernels read as row-contiguous.
void guard_layouts(ExportedTrace& t);

}  // namespace mlx::core::detail
