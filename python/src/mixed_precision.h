// mx.mixed_precision (an extension of this project, not MLX API): inside the context, matrix
// products and nn layers compute in a lower-precision dtype while parameters and gradients keep
// theirs (the policy of Module.set_compute_dtype).
#pragma once

#include <optional>

#include "mlx/array.h"
#include "mlx/ops/creation.h"

namespace mlx::core::python {

// The compute dtype of the innermost active mixed_precision context of this thread.
inline std::optional<Dtype>& mixed_precision_dtype() {
  thread_local std::optional<Dtype> dtype;
  return dtype;
}

// `x` in the active compute dtype when it is floating point (unchanged otherwise).
inline array in_compute_dtype(const array& x) {
  auto& t = mixed_precision_dtype();
  if (t && is_floating_point(x.dtype()) && x.dtype() != *t) {
    return astype(x, *t);
  }
  return x;
}

}  // namespace mlx::core::python
