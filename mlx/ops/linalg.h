// Matrix products: matmul and its relatives (addmm, inner, outer, tensordot).
#pragma once

#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// NumPy matmul: 1-D operands act as a row (first) or column (second) vector whose extra
// dimension is dropped from the result; leading (batch) dimensions broadcast.
array matmul(const array& a, const array& b, StreamOrDevice s = {});

// alpha * (a @ b) + beta * c, with c broadcast to the shape of a @ b.
array addmm(array c, array a, array b, const float& alpha = 1.f, const float& beta = 1.f,
            StreamOrDevice s = {});

// Sum product over the last axes of a and b (a scalar operand multiplies).
array inner(const array& a, const array& b, StreamOrDevice s = {});

// Outer product of the flattened inputs.
array outer(const array& a, const array& b, StreamOrDevice s = {});

// Contracts the last `axis` axes of a with the first `axis` axes of b.
array tensordot(const array& a, const array& b, const int axis = 2, StreamOrDevice s = {});

// Contracts axes_a of a with axes_b of b (pairwise, same lengths).
array tensordot(const array& a, const array& b, const std::vector<int>& axes_a,
                const std::vector<int>& axes_b, StreamOrDevice s = {});

namespace detail {

// matmul(a, b), accumulated and stored in float32 when `float32_out` and the operands are
// float16 / bfloat16 (Matmul's float32_out); the plain matmul otherwise.
array matmul(const array& a, const array& b, bool float32_out, StreamOrDevice s = {});

}  // namespace detail

}  // namespace mlx::core
