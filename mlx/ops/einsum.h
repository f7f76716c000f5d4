// Einstein summation (NumPy's einsum), built from matmul, multiply, diagonal, sum and
// transpose, and the contraction order it uses.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// The contraction order einsum uses for `subscripts` and `operands`: one entry per step, the
// positions (in the current operand list, where each step's result is appended last) of the
// operands it combines ({0} for a single operand), and a printable summary of the steps.
std::pair<std::vector<std::vector<int>>, std::string> einsum_path(
    const std::string& subscripts, const std::vector<array>& operands);

// Einstein summation: explicit ("ij,jk->ik") or implicit ("ij,jk") output, repeated labels
// within an operand (diagonals), "..." broadcasting. Size-1 dimensions broadcast against the
// same label in other operands. Operands are contracted pairwise in a greedy order, each pair
// with one (batched) matmul.
array einsum(const std::string& subscripts, const std::vector<array>& operands,
             StreamOrDevice s = {});

}  // namespace mlx::core
