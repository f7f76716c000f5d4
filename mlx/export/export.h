// Exporting functions to files and importing them (MLX's export API).
//
// export_function traces a function on placeholders shaped like the example inputs, turns the
// trace into compile's straight-line program (primitives with their parameters, the captured
// constants such as weights) and writes it with format version 2 (export.cpp describes
// the layout). import_function reads and validates a file (a truncated or hostile file throws
// std::runtime_error naming the problem) and returns a callable that replays the program on
// new inputs as an ordinary lazy graph, so it composes with grad, vmap and compile.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {

using Args = std::vector<array>;
using Kwargs = std::map<std::string, array>;
using ExportFn = std::function<std::vector<array>(const Args&, const Kwargs&)>;

namespace detail {
struct ExportedTrace;
struct ImportedFile;
}  // namespace detail

struct ExportOptions {
  bool shapeless = false;
  std::string metadata;
  // Orders the program's steps to lower the peak of live intermediate bytes and makes the
  // imported function evaluate in that order (see export/memory_plan.h).
  bool optimize_memory = false;
};

// Collects traces of one function (one per distinct input signature) and writes them to one
// file on close() (or destruction).
class FunctionExporter {
 public:
  FunctionExporter(std::string file, ExportFn fun, ExportOptions options = {});
  ~FunctionExporter();
  FunctionExporter(const FunctionExporter&) = delete;
  FunctionExporter& operator=(const FunctionExporter&) = delete;
  // Traces fun on inputs like these.
  void operator()(const Args& args, const Kwargs& kwargs = {});
  void close();

 private:
  std::string file_;
  ExportFn fun_;
  ExportOptions options_;
  std::vector<std::shared_ptr<detail::ExportedTrace>> traces_;
  bool closed_ = false;
};

void export_function(const std::string& file, const ExportFn& fun, const Args& args,
                     const Kwargs& kwargs = {}, ExportOptions options = {});

class ImportedFunction {
 public:
  explicit ImportedFunction(std::shared_ptr<const detail::ImportedFile> file)
      : file_(std::move(file)) {}
  // Runs the trace whose signature matches (number of positional inputs, keyword names,
  // dtypes, and shapes unless the trace is shapeless); throws std::invalid_argument otherwise.
  std::vector<array> operator()(const Args& args, const Kwargs& kwargs = {}) const;
  const std::string& metadata() const;

 private:
  std::shared_ptr<const detail::ImportedFile> file_;
};

ImportedFunction import_function(const std::string& file);

// A description of one trace for callback exporters: the program in plain terms.
struct ExportedNode {
  std::string primitive;     // the class name (as in the file)
  std::string state;         // the serialized parameters
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids
  std::vector<Shape> output_shapes;
  std::vector<Dtype> output_dtypes;
};
struct ExportedGraph {
  std::vector<int> inputs;  // value ids of the positional inputs, then the keyword inputs
  std::vector<std::string> keyword_names;
  std::vector<std::pair<int, array>> constants;
  std::vector<ExportedNode> nodes;
  std::vector<int> outputs;
};
ExportedGraph trace_for_export(const ExportFn& fun, const Args& args, const Kwargs& kwargs,
                               bool shapeless);

// Writes the graph that computes `outputs` in Graphviz DOT; `names` labels arrays.
void export_to_dot(std::ostream& os, const std::vector<array>& outputs,
                   const std::map<std::string, array>& names = {});

}  // namespace mlx::core
