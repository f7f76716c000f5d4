// Reductions, arg reductions, cumulative ops and softmax, with MLX's signatures. Each
// reduction reduces all axes, a list of axes or one axis; keepdims keeps the reduced axes as
// size-1 dimensions.
#pragma once

#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

#define MLX_REDUCTION_OVERLOADS(NAME)                                                    \
  array NAME(const array& a, bool keepdims, StreamOrDevice s = {});                      \
  inline array NAME(const array& a, StreamOrDevice s = {}) { return NAME(a, false, s); } \
  array NAME(const array& a, const std::vector<int>& axes, bool keepdims = false,        \
             StreamOrDevice s = {});                                                     \
  array NAME(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// True where every / any element is non-zero (bool output).
MLX_REDUCTION_OVERLOADS(all)
MLX_REDUCTION_OVERLOADS(any)
// bool, int8 and int16 sum to int32; uint8 and uint16 to uint32; 16-bit floats accumulate in
// float32. Empty reductions give 0 (sum) and 1 (prod).
MLX_REDUCTION_OVERLOADS(sum)
MLX_REDUCTION_OVERLOADS(prod)
// NaN propagates; reducing a zero-size axis throws.
MLX_REDUCTION_OVERLOADS(max)
MLX_REDUCTION_OVERLOADS(min)
// Floating-point result (float32 for integer inputs).
MLX_REDUCTION_OVERLOADS(mean)
// log(sum(exp(a))) computed stably; rows whose maximum is infinite give that maximum.
MLX_REDUCTION_OVERLOADS(logsumexp)

#undef MLX_REDUCTION_OVERLOADS

// Variance and standard deviation with `ddof` delta degrees of freedom: the sum of squared
// deviations is divided by N - ddof.
array var(const array& a, bool keepdims, int ddof = 0, StreamOrDevice s = {});
inline array var(const array& a, StreamOrDevice s = {}) { return var(a, false, 0, s); }
array var(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0,
          StreamOrDevice s = {});
array var(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});
array std(const array& a, bool keepdims, int ddof = 0, StreamOrDevice s = {});
inline array std(const array& a, StreamOrDevice s = {}) { return std(a, false, 0, s); }
array std(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0,
          StreamOrDevice s = {});
array std(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});

// Index (uint32) of the first maximum / minimum; a NaN counts as the extreme. Without an
// axis the array is flattened.
array argmax(const array& a, bool keepdims, StreamOrDevice s = {});
inline array argmax(const array& a, StreamOrDevice s = {}) { return argmax(a, false, s); }
array argmax(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array argmin(const array& a, bool keepdims, StreamOrDevice s = {});
inline array argmin(const array& a, StreamOrDevice s = {}) { return argmin(a, false, s); }
array argmin(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// Cumulative ops along `axis`. reverse: accumulate from the end; inclusive = false: element i
// of the output excludes element i of the input (the first output is the identity).
array cumsum(const array& a, int axis, bool reverse = false, bool inclusive = true,
             StreamOrDevice s = {});
array cumprod(const array& a, int axis, bool reverse = false, bool inclusive = true,
              StreamOrDevice s = {});
array cummax(const array& a, int axis, bool reverse = false, bool inclusive = true,
             StreamOrDevice s = {});
array cummin(const array& a, int axis, bool reverse = false, bool inclusive = true,
             StreamOrDevice s = {});
array logcumsumexp(const array& a, int axis, bool reverse = false, bool inclusive = true,
                   StreamOrDevice s = {});

// exp(a - max) / sum(exp(a - max)) over `axes`. 16-bit floats always compute in float32, so
// `precise` (MLX's request for float32 accumulation) is already satisfied.
array softmax(const array& a, const std::vector<int>& axes, bool precise = false,
              StreamOrDevice s = {});
array softmax(const array& a, bool precise = false, StreamOrDevice s = {});
inline array softmax(const array& a, int axis, bool precise = false, StreamOrDevice s = {}) {
  return softmax(a, std::vector<int>{axis}, precise, s);
}

// Scalar bool: same shape and equal elements (NaNs equal when equal_nan); dtypes may differ.
array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s = {});
inline array array_equal(const array& a, const array& b, StreamOrDevice s = {}) {
  return array_equal(a, b, false, s);
}
// Scalar bool: isclose(a, b, rtol, atol, equal_nan) holds everywhere.
array allclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false, StreamOrDevice s = {});

// Sum of the diagonal selected by offset/axis1/axis2 (see diagonal), in `dtype`.
array trace(const array& a, int offset, int axis1, int axis2, Dtype dtype, StreamOrDevice s = {});
array trace(const array& a, int offset, int axis1, int axis2, StreamOrDevice s = {});
array trace(const array& a, StreamOrDevice s = {});

}  // namespace mlx::core
