// mx.linalg. Norms and the cross product are composites; the factorizations build the
// LAPACK-backed primitives on a CPU stream, after checking shapes and dtypes.
#include "mlx/linalg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <variant>

#include "mlx/ops.h"
#include "mlx/primitives/linalg_lapack.h"
#include "mlx/utils.h"

namespace mlx::core::linalg {

namespace {

// No stream means the CPU's default stream, where Apple MLX programs run these (it has no GPU
// factorizations and they pass mx.cpu). A GPU stream is taken as given.
Stream linalg_stream(StreamOrDevice s) {
  if (std::holds_alternative<std::monostate>(s)) {
    return default_stream(Device(Device::cpu));
  }
  return to_stream(s);
}

// Checks a (batch of) matrix input and returns it row-contiguous.
array matrix_input(const array& a, const char* op, bool square, Stream s) {
  if (a.ndim() < 2) {
    throw std::invalid_argument(
        msg("[", op, "] Arrays must have at least 2 dimensions; got shape ", a.shape(), "."));
  }
  if (square && a.shape(-1) != a.shape(-2)) {
    throw std::invalid_argument(
        msg("[", op, "] Expected square matrices; got shape ", a.shape(), "."));
  }
  // Integer and bool matrices are promoted to float32 (as MLX does); half types are refused.
  bool integral = a.dtype() == bool_ || issubdtype(a.dtype(), DtypeCategory::integer);
  if (!integral && a.dtype() != float32 && a.dtype() != float64) {
    throw std::invalid_argument(msg("[", op, "] Arrays must have type float32 or float64; got ",
                                    dtype_name(a.dtype()), "."));
  }
  return contiguous(integral ? astype(a, float32, s) : a, false, s);
}

array mT(const array& x, StreamOrDevice s) { return swapaxes(x, -1, -2, s); }

Shape with_last(Shape shape, std::initializer_list<int> last, int drop) {
  shape.resize(shape.size() - drop);
  shape.insert(shape.end(), last);
  return shape;
}

// Axes of a norm: the given ones normalized, or all axes of a 1-D / 2-D input.
std::vector<int> norm_axes(const array& a, const std::optional<std::vector<int>>& axis) {
  if (!axis) {
    if (a.ndim() != 1 && a.ndim() != 2) {
      throw std::invalid_argument(
          msg("[linalg::norm] Without axis, an explicit ord needs a 1-D or 2-D input; got shape ",
              a.shape(), "."));
    }
    return a.ndim() == 1 ? std::vector<int>{0} : std::vector<int>{0, 1};
  }
  if (axis->size() != 1 && axis->size() != 2) {
    throw std::invalid_argument(
        msg("[linalg::norm] axis must hold 1 or 2 axes; got ", axis->size(), "."));
  }
  auto axes = normalize_axes(*axis, a.ndim(), "linalg::norm");
  return axes;
}

array float_input(const array& a, StreamOrDevice s) {
  return is_inexact(a.dtype()) ? a : astype(a, float32, s);
}

array vector_norm(const array& a, double ord, int ax, bool keepdims, StreamOrDevice s) {
  array x = abs(float_input(a, s), s);
  std::vector<int> axes{ax};
  if (ord == std::numeric_limits<double>::infinity()) {
    return max(x, axes, keepdims, s);
  }
  if (ord == -std::numeric_limits<double>::infinity()) {
    return min(x, axes, keepdims, s);
  }
  if (ord == 0) {
    return astype(sum(not_equal(x, array(0, x.dtype()), s), axes, keepdims, s), x.dtype(), s);
  }
  if (ord == 1) {
    return sum(x, axes, keepdims, s);
  }
  if (ord == 2) {
    return sqrt(sum(square(x, s), axes, keepdims, s), s);
  }
  array p(ord, x.dtype());
  return power(sum(power(x, p, s), axes, keepdims, s), reciprocal(p, s), s);
}

// Singular values of the matrices spanned by axes (a0, a1), reduced with `reduce`.
array singular_norm(const array& a, int a0, int a1, bool keepdims, StreamOrDevice s,
                    array (*reduce)(const array&, int, bool, StreamOrDevice)) {
  std::vector<int> perm;
  for (int i = 0; i < a.ndim(); ++i) {
    if (i != a0 && i != a1) {
      perm.push_back(i);
    }
  }
  perm.push_back(a0);
  perm.push_back(a1);
  array x = float_input(a, s);
  array sv = svd(transpose(x, perm, s), false, s)[0];
  array out = reduce(sv, -1, false, s);
  if (keepdims) {
    out = expand_dims(out, {std::min(a0, a1), std::max(a0, a1)}, s);
  }
  return out;
}

array matrix_norm(const array& a, double ord, int a0, int a1, bool keepdims, StreamOrDevice s) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (ord == 2 || ord == -2) {
    return singular_norm(
        a, a0, a1, keepdims, s,
        ord > 0 ? static_cast<array (*)(const array&, int, bool, StreamOrDevice)>(max)
                : static_cast<array (*)(const array&, int, bool, StreamOrDevice)>(min));
  }
  if (ord != 1 && ord != -1 && ord != inf && ord != -inf) {
    throw std::invalid_argument(msg("[linalg::norm] Invalid ord ", ord, " for matrix norms."));
  }
  // 1-norms sum over rows (axis a0) then reduce over columns; inf-norms the other way round.
  bool by_columns = std::abs(ord) == 1;
  int sum_axis = by_columns ? a0 : a1;
  int red_axis = by_columns ? a1 : a0;
  array sums = sum(abs(float_input(a, s), s), std::vector<int>{sum_axis}, true, s);
  array out = ord > 0 ? max(sums, std::vector<int>{red_axis}, true, s)
                      : min(sums, std::vector<int>{red_axis}, true, s);
  return keepdims ? out : squeeze(out, std::vector<int>{a0, a1}, s);
}

array frobenius(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  array x = float_input(a, s);
  return sqrt(sum(square(abs(x, s), s), axes, keepdims, s), s);
}

}  // namespace

array norm(const array& a, const double ord, const std::optional<std::vector<int>>& axis,
           bool keepdims, StreamOrDevice s) {
  auto axes = norm_axes(a, axis);
  if (axes.size() == 1) {
    return vector_norm(a, ord, axes[0], keepdims, s);
  }
  if (axes[0] == axes[1]) {
    throw std::invalid_argument("[linalg::norm] The two axes of a matrix norm must differ.");
  }
  return matrix_norm(a, ord, axes[0], axes[1], keepdims, s);
}

array norm(const array& a, const std::string& ord, const std::optional<std::vector<int>>& axis,
           bool keepdims, StreamOrDevice s) {
  auto axes = norm_axes(a, axis);
  if (axes.size() != 2) {
    throw std::invalid_argument(
        msg("[linalg::norm] ord '", ord, "' is a matrix norm and needs two axes."));
  }
  if (axes[0] == axes[1]) {
    throw std::invalid_argument("[linalg::norm] The two axes of a matrix norm must differ.");
  }
  if (ord == "fro" || ord == "f") {
    return frobenius(a, axes, keepdims, s);
  }
  if (ord == "nuc") {
    return singular_norm(a, axes[0], axes[1], keepdims, s,
                         static_cast<array (*)(const array&, int, bool, StreamOrDevice)>(sum));
  }
  throw std::invalid_argument(msg("[linalg::norm] Invalid ord '", ord, "'."));
}

array norm(const array& a, const std::optional<std::vector<int>>& axis, bool keepdims,
           StreamOrDevice s) {
  if (!axis) {
    std::vector<int> all(a.ndim());
    for (int i = 0; i < a.ndim(); ++i) {
      all[i] = i;
    }
    return frobenius(a, all, keepdims, s);
  }
  auto axes = norm_axes(a, axis);
  if (axes.size() == 2 && axes[0] == axes[1]) {
    throw std::invalid_argument("[linalg::norm] The two axes of a matrix norm must differ.");
  }
  return frobenius(a, axes, keepdims, s);
}

array cross(const array& a, const array& b, int axis, StreamOrDevice s) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    throw std::invalid_argument("[linalg::cross] Inputs must have at least one dimension.");
  }
  // A 2-vector gets a zero third component.
  auto to3 = [&](const array& v) {
    int ax = normalize_axis(axis, v.ndim(), "linalg::cross");
    int n = v.shape(ax);
    if (n != 2 && n != 3) {
      throw std::invalid_argument(msg("[linalg::cross] Inputs must have size 2 or 3 along axis ",
                                      axis, "; got shapes ", a.shape(), " and ", b.shape(), "."));
    }
    if (n == 3) {
      return v;
    }
    Shape zshape = v.shape();
    zshape[ax] = 1;
    return concatenate({v, zeros(zshape, v.dtype(), s)}, ax, s);
  };
  Dtype dt = promote_types(a.dtype(), b.dtype());
  array x = to3(astype(a, dt, s));
  array y = to3(astype(b, dt, s));
  Shape shape = broadcast_shapes(x.shape(), y.shape(), "linalg::cross");
  int ax = normalize_axis(axis, static_cast<int>(shape.size()), "linalg::cross");
  x = broadcast_to(x, shape, s);
  y = broadcast_to(y, shape, s);
  auto comp = [&](const array& v, int i) { return take(v, i, ax, s); };
  auto term = [&](int i, int j) {
    return subtract(multiply(comp(x, i), comp(y, j), s), multiply(comp(x, j), comp(y, i), s), s);
  };
  return stack({term(1, 2), term(2, 0), term(0, 1)}, ax, s);
}

array inv(const array& a, StreamOrDevice s) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, "linalg::inv", true, st);
  return array(x.shape(), x.dtype(), std::make_shared<Inverse>(st, Inverse::Kind::General, false),
               {x});
}

array tri_inv(const array& a, bool upper, StreamOrDevice s) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, "linalg::tri_inv", true, st);
  return array(x.shape(), x.dtype(),
               std::make_shared<Inverse>(st, Inverse::Kind::Triangular, upper), {x});
}

array cholesky(const array& a, bool upper, StreamOrDevice s) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, "linalg::cholesky", true, st);
  return array(x.shape(), x.dtype(), std::make_shared<Cholesky>(st, upper), {x});
}

array cholesky_inv(const array& a, bool upper, StreamOrDevice s) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, "linalg::cholesky_inv", true, st);
  // potri reads one triangle only; keep the factor's other triangle out of the vjp.
  x = upper ? triu(x, 0, st) : tril(x, 0, st);
  return array(x.shape(), x.dtype(), std::make_shared<Inverse>(st, Inverse::Kind::Cholesky, upper),
               {x});
}

array pinv(const array& a, StreamOrDevice s) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, "linalg::pinv", false, st);
  int m = x.shape(-2), n = x.shape(-1), k = std::min(m, n);
  auto usv = svd(x, true, st);
  // Keep the k leading singular vectors; drop singular values below NumPy's default rcond.
  Shape start(x.ndim(), 0);
  Shape u_stop = x.shape(), vt_stop = x.shape();
  u_stop.back() = k;
  vt_stop[x.ndim() - 2] = k;
  array u = slice(usv[0], start, u_stop, st);
  array vt = slice(usv[2], start, vt_stop, st);
  array sv = usv[1];
  double eps = x.dtype() == float64 ? 2.220446049250313e-16 : 1.1920929e-07;
  array cutoff = multiply(max(sv, -1, true, st), array(eps * std::max(m, n), x.dtype()), st);
  array keep = greater(sv, cutoff, st);
  array sinv = where(keep, reciprocal(where(keep, sv, array(1, x.dtype()), st), st),
                     array(0, x.dtype()), st);
  return matmul(multiply(mT(vt, st), expand_dims(sinv, -2, st), st), mT(u, st), st);
}

array solve(const array& a, const array& b, StreamOrDevice s) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, "linalg::solve", true, st);
  if (b.ndim() < 1) {
    throw std::invalid_argument("[linalg::solve] b must have at least one dimension.");
  }
  if (is_complex(b.dtype())) {
    throw std::invalid_argument(
        msg("[linalg::solve] Arrays must have type float32 or float64; got ", dtype_name(b.dtype()),
            "."));
  }
  // As in NumPy 2, only a 1-D b is a vector; otherwise b is a (batch of) matrices.
  bool vec = b.ndim() == 1;
  array y = vec ? expand_dims(b, -1, st) : b;
  int n = x.shape(-1);
  if (y.shape(-2) != n) {
    throw std::invalid_argument(msg("[linalg::solve] Shapes ", a.shape(), " and ", b.shape(),
                                    " do not match: b needs ", n, " rows."));
  }
  Dtype dt = promote_types(x.dtype(), y.dtype());
  Shape batch = broadcast_shapes(Shape(x.shape().begin(), x.shape().end() - 2),
                                 Shape(y.shape().begin(), y.shape().end() - 2), "linalg::solve");
  x = contiguous(broadcast_to(astype(x, dt, st), with_last(batch, {n, n}, 0), st), false, st);
  y = broadcast_to(astype(y, dt, st), with_last(batch, {n, y.shape(-1)}, 0), st);
  array out(y.shape(), dt, std::make_shared<Solve>(st), {x, y});
  return vec ? squeeze(out, -1, st) : out;
}

array solve_triangular(const array& a, const array& b, bool upper, StreamOrDevice s) {
  Stream st = linalg_stream(s);
  matrix_input(a, "linalg::solve_triangular", true, st);
  bool vec = b.ndim() == 1;
  array y = vec ? expand_dims(b, -1, st) : b;
  if (y.ndim() < 2 || y.shape(-2) != a.shape(-1)) {
    throw std::invalid_argument(
        msg("[linalg::solve_triangular] Shapes ", a.shape(), " and ", b.shape(), " do not match."));
  }
  array out = matmul(tri_inv(a, upper, st), y, st);
  return vec ? squeeze(out, -1, st) : out;
}

std::pair<array, array> qr(const array& a, StreamOrDevice s) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, "linalg::qr", false, st);
  int m = x.shape(-2), n = x.shape(-1), k = std::min(m, n);
  auto out = array::make_arrays({with_last(x.shape(), {m, k}, 2), with_last(x.shape(), {k, n}, 2)},
                                {x.dtype(), x.dtype()}, std::make_shared<QRF>(st), {x});
  return {out[0], out[1]};
}

std::vector<array> svd(const array& a, bool compute_uv, StreamOrDevice s) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, "linalg::svd", false, st);
  int m = x.shape(-2), n = x.shape(-1), k = std::min(m, n);
  Shape s_shape = with_last(x.shape(), {k}, 2);
  auto prim = std::make_shared<SVD>(st, compute_uv);
  if (!compute_uv) {
    return array::make_arrays({s_shape}, {x.dtype()}, prim, {x});
  }
  return array::make_arrays(
      {with_last(x.shape(), {m, m}, 2), s_shape, with_last(x.shape(), {n, n}, 2)},
      {x.dtype(), x.dtype(), x.dtype()}, prim, {x});
}

namespace {

std::vector<array> eigh_impl(const array& a, const std::string& uplo, bool vectors,
                             StreamOrDevice s, const char* op) {
  Stream st = linalg_stream(s);
  if (uplo != "L" && uplo != "U") {
    throw std::invalid_argument(msg("[", op, "] UPLO must be 'L' or 'U'; got '", uplo, "'."));
  }
  array x = matrix_input(a, op, true, st);
  Shape w_shape(x.shape().begin(), x.shape().end() - 1);
  auto prim = std::make_shared<Eigh>(st, uplo == "U", vectors);
  if (!vectors) {
    return array::make_arrays({w_shape}, {x.dtype()}, prim, {x});
  }
  return array::make_arrays({w_shape, x.shape()}, {x.dtype(), x.dtype()}, prim, {x});
}

std::vector<array> eig_impl(const array& a, bool vectors, StreamOrDevice s, const char* op) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, op, true, st);
  Shape w_shape(x.shape().begin(), x.shape().end() - 1);
  auto prim = std::make_shared<Eig>(st, vectors);
  if (!vectors) {
    return array::make_arrays({w_shape}, {complex64}, prim, {x});
  }
  return array::make_arrays({w_shape, x.shape()}, {complex64, complex64}, prim, {x});
}

std::vector<array> luf(const array& a, StreamOrDevice s, const char* op) {
  Stream st = linalg_stream(s);
  array x = matrix_input(a, op, false, st);
  int m = x.shape(-2), n = x.shape(-1), k = std::min(m, n);
  return array::make_arrays({x.shape(), with_last(x.shape(), {k}, 2), with_last(x.shape(), {m}, 2)},
                            {x.dtype(), uint32, uint32}, std::make_shared<LUF>(st), {x});
}

}  // namespace

array eigvalsh(const array& a, std::string UPLO, StreamOrDevice s) {
  return eigh_impl(a, UPLO, false, s, "linalg::eigvalsh")[0];
}

std::pair<array, array> eigh(const array& a, std::string UPLO, StreamOrDevice s) {
  auto out = eigh_impl(a, UPLO, true, s, "linalg::eigh");
  return {out[0], out[1]};
}

array eigvals(const array& a, StreamOrDevice s) {
  return eig_impl(a, false, s, "linalg::eigvals")[0];
}

std::pair<array, array> eig(const array& a, StreamOrDevice s) {
  auto out = eig_impl(a, true, s, "linalg::eig");
  return {out[0], out[1]};
}

std::pair<array, array> lu_factor(const array& a, StreamOrDevice s) {
  auto out = luf(a, s, "linalg::lu_factor");
  return {out[0], out[1]};
}

std::vector<array> lu(const array& a, StreamOrDevice s) {
  auto out = luf(a, s, "linalg::lu");
  Stream st = out[0].primitive().stream();
  int m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  Shape start(a.ndim(), 0);
  Shape l_stop = a.shape(), u_stop = a.shape();
  l_stop.back() = k;
  u_stop[a.ndim() - 2] = k;
  Dtype dt = out[0].dtype();
  array l = add(tril(slice(out[0], start, l_stop, st), -1, st), eye(m, k, 0, dt, st), st);
  array u = triu(slice(out[0], start, u_stop, st), 0, st);
  return {out[2], l, u};
}

namespace {

// {sign of the row permutation, diagonal of U} of a's LU factorization.
std::pair<array, array> lu_parts(const array& a, StreamOrDevice s, const char* op) {
  auto out = luf(a, s, op);
  if (a.shape(-1) != a.shape(-2)) {
    throw std::invalid_argument(
        msg("[", op, "] Expected square matrices; got shape ", a.shape(), "."));
  }
  Stream st = out[0].primitive().stream();
  int n = a.shape(-1);
  array swaps = sum(not_equal(out[1], arange(0, n, uint32, st), st), -1, false, st);
  array odd = remainder(astype(swaps, int32, st), array(2, int32), st);
  Dtype dt = out[0].dtype();
  array sign = subtract(array(1, dt), multiply(array(2, dt), astype(odd, dt, st), st), st);
  return {sign, diagonal(out[0], 0, -2, -1, st)};
}

}  // namespace

array det(const array& a, StreamOrDevice s) {
  auto [sign, d] = lu_parts(a, s, "linalg::det");
  return multiply(sign, prod(d, -1, false, d.primitive().stream()), d.primitive().stream());
}

std::pair<array, array> slogdet(const array& a, StreamOrDevice s) {
  auto [sign, d] = lu_parts(a, s, "linalg::slogdet");
  Stream st = d.primitive().stream();
  array total = multiply(sign, prod(mlx::core::sign(d, st), -1, false, st), st);
  return {total, sum(log(abs(d, st), st), -1, false, st)};
}

}  // namespace mlx::core::linalg
