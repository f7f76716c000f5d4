// Grouped and masked matrix products: products of matrices picked by index (gather_mm, the
// mixture-of-experts product), products over segments of the inner dimension (segmented_mm)
// and products with blocks masked out (block_masked_mm).
#pragma once

#include <optional>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// a (A..., M, K) and b (B..., K, N): out[i] = a_flat[lhs[i]] @ b_flat[rhs[i]], where a_flat
// and b_flat are the stacks of matrices over the flattened batch dimensions and the index
// arrays broadcast together (a missing one is arange over its operand's batch, shaped like
// it). The output has shape broadcast(lhs, rhs) + (M, N); 1-D operands act as in matmul.
// Indices out of range throw std::out_of_range when the result is evaluated.
array gather_mm(const array& a, const array& b,
                const std::optional<array>& lhs_indices = std::nullopt,
                const std::optional<array>& rhs_indices = std::nullopt, bool sorted_indices = false,
                StreamOrDevice s = {});

// a (M, K) and b (K, N) with segments (..., 2) of [start, end) offsets into K: out[..., :, :]
// = a[:, start:end] @ b[start:end, :], of shape segments.shape[:-1] + (M, N). Empty or
// reversed segments give zeros.
array segmented_mm(const array& a, const array& b, const array& segments, StreamOrDevice s = {});

// (a * lhs_mask) @ (b * rhs_mask) * out_mask, each mask given per block_size x block_size
// block (a (..., M, K) with mask_lhs (..., ceil(M / bs), ceil(K / bs)), and so on); boolean
// masks select, other masks scale their blocks. Batch dimensions broadcast.
array block_masked_mm(const array& a, const array& b, int block_size = 64,
                      const std::optional<array>& mask_out = std::nullopt,
                      const std::optional<array>& mask_lhs = std::nullopt,
                      const std::optional<array>& mask_rhs = std::nullopt, StreamOrDevice s = {});

namespace detail {

// The stack of matrices of x (..., R, C) as (prod(...), R, C).
array matrix_stack(const array& x, StreamOrDevice s = {});
// The default gather indices of x's matrices: arange over its batch, shaped like it.
array matrix_numbers(const array& x, StreamOrDevice s = {});

}  // namespace detail

}  // namespace mlx::core
