// export_to_dot: the lazy graph behind some arrays in Graphviz DOT. Primitive applications are
// ellipses, arrays (inputs, constants, evaluated leaves) are boxes with their shape and dtype.
#include <unordered_map>
#include <unordered_set>

#include "mlx/export/export.h"
#include "mlx/primitives/primitive.h"
#include "mlx/utils.h"

namespace mlx::core {

void export_to_dot(std::ostream& os, const std::vector<array>& outputs,
                   const std::map<std::string, array>& names) {
  std::unordered_map<uintptr_t, std::string> label;
  for (auto& [name, a] : names) {
    label[a.id()] = name;
  }
  auto array_node = [&](const array& a) {
    auto it = label.find(a.id());
    std::string text = it != label.end() ? it->second + "\\n" : "";
    return text + to_string(a.shape()) + " " + dtype_name(a.dtype());
  };
  os << "digraph {\n";
  std::unordered_set<uintptr_t> seen, drawn;
  std::vector<array> stack(outputs.rbegin(), outputs.rend());
  while (!stack.empty()) {
    array a = stack.back();
    stack.pop_back();
    if (!seen.insert(a.id()).second) {
      continue;
    }
    os << "  A" << a.id() << " [label=\"" << array_node(a) << "\", shape=box];\n";
    if (!a.has_primitive()) {
      continue;
    }
    // One primitive node per sibling group, named after the first output.
    std::vector<array> group = a.outputs();
    uintptr_t pid = group[0].id();
    if (drawn.insert(pid).second) {
      os << "  P" << pid << " [label=\"" << a.primitive().name() << "\"];\n";
      for (auto& in : a.inputs()) {
        os << "  A" << in.id() << " -> P" << pid << ";\n";
        stack.push_back(in);
      }
    }
    os << "  P" << pid << " -> A" << a.id() << ";\n";
  }
  os << "}\n";
}

}  // namespace mlx::core
