// Array creation and dtype conversion.
#pragma once

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s = {});
array arange(double start, double stop, double step, StreamOrDevice s = {});
array arange(double start, double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double start, double stop, StreamOrDevice s = {});
array arange(double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double stop, StreamOrDevice s = {});
array arange(int start, int stop, int step, StreamOrDevice s = {});
array arange(int start, int stop, StreamOrDevice s = {});
array arange(int stop, StreamOrDevice s = {});

array linspace(double start, double stop, int num = 50, Dtype dtype = float32,
               StreamOrDevice s = {});
// `num` values from start; with `endpoint` the last is stop, else the interval is split into
// num steps and stop is left out (NumPy's endpoint=False).
array linspace(double start, double stop, int num, bool endpoint, Dtype dtype = float32,
               StreamOrDevice s = {});

array astype(array a, Dtype dtype, StreamOrDevice s = {});
// A row-contiguous copy of `a` (no work when it already is one).
array contiguous(array a, bool allow_col_major = false, StreamOrDevice s = {});
array copy(array a, StreamOrDevice s = {});

array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s = {});
array full(Shape shape, array vals, StreamOrDevice s = {});
template <typename T>
array full(Shape shape, T val, Dtype dtype, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val, dtype), dtype, s);
}
template <typename T>
array full(Shape shape, T val, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val), s);
}

array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array zeros(const Shape& shape, StreamOrDevice s = {}) { return zeros(shape, float32, s); }
array zeros_like(const array& a, StreamOrDevice s = {});
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array ones(const Shape& shape, StreamOrDevice s = {}) { return ones(shape, float32, s); }
array ones_like(const array& a, StreamOrDevice s = {});
array full_like(const array& a, array vals, StreamOrDevice s = {});
// a's shape filled with `vals` as `dtype`. In a shapeless trace the *_like shapes follow `a`
// when the trace is replayed.
array full_like(const array& a, array vals, Dtype dtype, StreamOrDevice s = {});

array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s = {});
inline array eye(int n, Dtype dtype, StreamOrDevice s = {}) { return eye(n, n, 0, dtype, s); }
inline array eye(int n, int m, StreamOrDevice s = {}) { return eye(n, m, 0, float32, s); }
inline array eye(int n, int m, int k, StreamOrDevice s = {}) { return eye(n, m, k, float32, s); }
inline array eye(int n, StreamOrDevice s = {}) { return eye(n, n, 0, float32, s); }
array identity(int n, Dtype dtype, StreamOrDevice s = {});
inline array identity(int n, StreamOrDevice s = {}) { return identity(n, float32, s); }
// Lower-triangular mask of ones: tri[i, j] = j <= i + k.
array tri(int n, int m, int k, Dtype type, StreamOrDevice s = {});
inline array tri(int n, Dtype type, StreamOrDevice s = {}) { return tri(n, n, 0, type, s); }

}  // namespace mlx::core
