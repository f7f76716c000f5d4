// What GatherMM and GatherQMM share on the GPU: products out[i] = A[lhs[i]] @ B_rhs[i] grouped
// by right-hand matrix (a mixture-of-experts layer's expert), so that each matrix is read by one
// product whatever the number of left-hand blocks routed to it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "mlx/array.h"

namespace mlx::core::cu {

// product(matrix, rows, result): result (R, N) = rows (R, K) @ right-hand matrix `matrix`.
using GroupProduct = std::function<void(int64_t matrix, const array& rows, array& result)>;

// a: (X, M, K) row-contiguous; out: allocated (S, M, N) row-major; lhs, rhs: S checked block
// numbers. Per group of positions with one rhs, their blocks of `a` are gathered into rows
// (n M, K), multiplied by `product`, and the result's blocks copied to their places in out.
void grouped_products(const array& a, const std::vector<int64_t>& lhs,
                      const std::vector<int64_t>& rhs, int64_t n_matrices, array& out,
                      const GroupProduct& product);

}  // namespace mlx::core::cu
