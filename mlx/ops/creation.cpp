#include "mlx/ops/creation.h"

#include <cmath>

#include "mlx/ops/elementwise.h"
#include "mlx/ops/graph.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/creation.h"
#include "mlx/primitives/shape.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s) {
  if (dtype == bool_) {
    throw std::invalid_argument("[arange] Cannot use bool dtype.");
  }
  if (step == 0 || std::isnan(start) || std::isnan(stop) || std::isnan(step)) {
    throw std::invalid_argument(
        msg("[arange] Invalid arguments start=", start, " stop=", stop, " step=", step, "."));
  }
  if (std::isinf(start) || std::isinf(stop)) {
    throw std::invalid_argument("[arange] Cannot compute length with infinite bounds.");
  }
  double real_size = std::ceil((stop - start) / step);
  if (real_size > static_cast<double>(INT32_MAX)) {
    throw std::invalid_argument(msg("[arange] Length ", real_size, " is too large."));
  }
  int size = std::max(static_cast<int>(real_size), 0);
  return array({size}, dtype, std::make_shared<Arange>(to_stream(s), start, stop, step), {});
}
array arange(double start, double stop, double step, StreamOrDevice s) {
  return arange(start, stop, step, float32, s);
}
array arange(double start, double stop, Dtype dtype, StreamOrDevice s) {
  return arange(start, stop, 1.0, dtype, s);
}
array arange(double start, double stop, StreamOrDevice s) {
  return arange(start, stop, 1.0, float32, s);
}
array arange(double stop, Dtype dtype, StreamOrDevice s) {
  return arange(0.0, stop, 1.0, dtype, s);
}
array arange(double stop, StreamOrDevice s) { return arange(0.0, stop, 1.0, float32, s); }
array arange(int start, int stop, int step, StreamOrDevice s) {
  return arange(static_cast<double>(start), static_cast<double>(stop), static_cast<double>(step),
                int32, s);
}
array arange(int start, int stop, StreamOrDevice s) { return arange(start, stop, 1, s); }
array arange(int stop, StreamOrDevice s) { return arange(0, stop, 1, s); }

array linspace(double start, double stop, int num, bool endpoint, Dtype dtype, StreamOrDevice s) {
  if (num < 0) {
    throw std::invalid_argument(msg("[linspace] num must be non-negative, got ", num, "."));
  }
  if (num == 1) {
    return astype(array({start}, float64), dtype, s);
  }
  // start + i * step, computed in float64; with the endpoint the last value is exactly stop.
  int intervals = endpoint ? num - 1 : num;
  array t = arange(0.0, static_cast<double>(num), 1.0, float64, s);
  double step = num > 1 ? (stop - start) / intervals : 0.0;
  array out = add(multiply(t, array(step, float64), s), array(start, float64), s);
  if (num > 1 && endpoint) {
    out = where(equal(t, array(static_cast<double>(num - 1), float64), s), array(stop, float64),
                out, s);
  }
  return astype(out, dtype, s);
}

array linspace(double start, double stop, int num, Dtype dtype, StreamOrDevice s) {
  return linspace(start, stop, num, true, dtype, s);
}

array astype(array a, Dtype dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) {
    return a;
  }
  Shape shape = a.shape();
  return array(std::move(shape), dtype, std::make_shared<AsType>(to_stream(s), dtype),
               {std::move(a)});
}

array contiguous(array a, bool allow_col_major, StreamOrDevice s) {
  if (a.is_available() &&
      (a.flags().row_contiguous || (allow_col_major && a.flags().col_contiguous)) &&
      a.data_size() == a.size()) {
    return a;
  }
  Shape shape = a.shape();
  Dtype dt = a.dtype();
  return array(std::move(shape), dt, std::make_shared<Copy>(to_stream(s)), {std::move(a)});
}

array copy(array a, StreamOrDevice s) {
  Shape shape = a.shape();
  Dtype dt = a.dtype();
  return array(std::move(shape), dt, std::make_shared<Copy>(to_stream(s)), {std::move(a)});
}

array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s) {
  shape_size(shape);  // validates
  auto in = broadcast_to(astype(std::move(vals), dtype, s), shape, s);
  return array(std::move(shape), dtype, std::make_shared<Full>(to_stream(s)), {std::move(in)});
}

array full(Shape shape, array vals, StreamOrDevice s) {
  Dtype dt = vals.dtype();
  return full(std::move(shape), std::move(vals), dt, s);
}

array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s) {
  return full(shape, array(false), dtype, s);
}
array full_like(const array& a, array vals, Dtype dtype, StreamOrDevice s) {
  if (!detail::in_shapeless_tracing()) {
    return full(a.shape(), std::move(vals), dtype, s);
  }
  if (broadcast_shapes(vals.shape(), a.shape(), "full_like") != a.shape()) {
    throw std::invalid_argument(msg("[full_like] Cannot fill shape ", a.shape(),
                                    " with values of shape ", vals.shape(), "."));
  }
  array in = dynamic_broadcast({astype(std::move(vals), dtype, s), a}, s);
  Shape shape = in.shape();
  return array(std::move(shape), dtype, std::make_shared<Full>(to_stream(s)), {std::move(in)});
}

array zeros_like(const array& a, StreamOrDevice s) {
  return full_like(a, array(false), a.dtype(), s);
}
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s) {
  return full(shape, array(true), dtype, s);
}
array ones_like(const array& a, StreamOrDevice s) {
  return full_like(a, array(true), a.dtype(), s);
}
array full_like(const array& a, array vals, StreamOrDevice s) {
  Dtype dtype = a.dtype();
  return full_like(a, std::move(vals), dtype, s);
}

namespace {
// compare(column, row + k) over an n x m grid, as `dtype`.
array diagonal_mask(const char* op, int n, int m, int k, Dtype dtype, bool lower,
                    StreamOrDevice s) {
  if (n < 0 || m < 0) {
    throw std::invalid_argument(
        msg("[", op, "] n and m must be non-negative, got ", n, " and ", m, "."));
  }
  array rows = reshape(arange(0, n, s), {n, 1}, s);
  array cols = reshape(arange(0, m, s), {1, m}, s);
  array shifted = add(rows, array(k), s);
  return astype(lower ? less_equal(cols, shifted, s) : equal(cols, shifted, s), dtype, s);
}
}  // namespace

array tri(int n, int m, int k, Dtype type, StreamOrDevice s) {
  return diagonal_mask("tri", n, m, k, type, true, s);
}

array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s) {
  return diagonal_mask("eye", n, m, k, dtype, false, s);
}

array identity(int n, Dtype dtype, StreamOrDevice s) { return eye(n, n, 0, dtype, s); }

}  // namespace mlx::core
