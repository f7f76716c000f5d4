// Running a graph built inside a GPU kernel (a primitive's composite form) on the calling GPU
// stream: each node's own GPU kernel, every node after its inputs. For primitives whose GPU
// form is, for now, their decomposition into other primitives.
#pragma once

#include <vector>

#include "mlx/array.h"

namespace mlx::core::cu {

// Evaluates the unevaluated nodes behind `results` here, freeing each intermediate once its
// last reader has run, as eval does.
void run_graph(const std::vector<array>& results);

// run_graph, then each output takes the matching result's buffer.
void run_graph_into(const std::vector<array>& results, std::vector<array>& outputs);

}  // namespace mlx::core::cu
