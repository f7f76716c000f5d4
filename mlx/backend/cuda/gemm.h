// Row-major matrix products for GPU kernels other than Matmul's own (quantized and grouped
// products): cuBLASLt for floating types, operands read in place where their layouts allow.
#pragma once

#include "mlx/array.h"
#include "mlx/backend/common/views.h"

namespace mlx::core::cu {

// out (allocated, row-major (..., M, N)) = a (..., M, K) @ b (..., K, N), operands of any
// strides with equal batch shapes; K == 0 gives zeros.
void gemm(const array& a, const array& b, array& out);

// A view of `base`'s memory with `shape` and `strides`, `offset` elements further on.
inline array view_of(const array& base, Shape shape, Strides strides, int64_t offset = 0) {
  array v(std::move(shape), base.dtype(), nullptr, {});
  set_view(base, v, strides, offset);
  return v;
}

}  // namespace mlx::core::cu
