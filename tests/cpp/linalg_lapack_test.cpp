// mx.linalg: norms and cross against float64 references; factorizations through identities
// (A inv(A) = I, QR = A, U S Vt = A, eigh residual, L L^T = A), batched and transposed
// inputs, errors, vmap and the closed-form gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "mlx/mlx.h"
#include "tests/cpp/test_utils.h"

namespace mlx::core::test {
namespace {

// A well-conditioned (diagonally dominant) batch of n x n matrices.
array well_conditioned(const Shape& batch, int n, Dtype dt, uint32_t seed = 1) {
  Shape shape = batch;
  shape.push_back(n);
  shape.push_back(n);
  array r = random_array(shape, float64, -1, 1, seed);
  return astype(add(r, multiply(identity(n, float64), array(double(n)))), dt);
}

// Symmetric positive definite: R R^T + n I.
array spd(const Shape& batch, int n, Dtype dt, uint32_t seed = 2) {
  Shape shape = batch;
  shape.push_back(n);
  shape.push_back(n);
  array r = random_array(shape, float64, -1, 1, seed);
  return astype(add(matmul(r, swapaxes(r, -1, -2)), multiply(identity(n, float64), array(1.0 * n))),
                dt);
}

array mT(const array& x) { return swapaxes(x, -1, -2); }

void expect_allclose(const array& a, const array& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  expect_close(a, to_vector(b), tol, tol);
}

array eye_like(const array& a) {
  int n = a.shape(-1);
  return broadcast_to(identity(n, a.dtype()), a.shape());
}

TEST(LinalgLapack, VectorNorms) {
  std::vector<double> v = {3, -4, 0, 1};
  array x = from_vector(v, {4});
  expect_close(linalg::norm(x), {std::sqrt(26.0)});
  expect_close(linalg::norm(x, 1.0), {8});
  expect_close(linalg::norm(x, INFINITY), {4});
  expect_close(linalg::norm(x, -INFINITY), {0});
  expect_close(linalg::norm(x, 0.0), {3});
  expect_close(linalg::norm(x, 3.0), {std::cbrt(27.0 + 64 + 1)});
  // Batched along an axis, keepdims, integer input promoted to float.
  array m = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, int32);
  array n0 = linalg::norm(m, 0, true);
  EXPECT_EQ(n0.dtype(), float32);
  expect_close(n0, {std::sqrt(17.0), std::sqrt(29.0), std::sqrt(45.0)}, {1, 3});
  expect_close(linalg::norm(m, 1.0, -1), {6, 15});
  // Without axis and ord, any ndim is flattened.
  array t = from_vector(random_values(24), {2, 3, 4});
  double ss = 0;
  for (double e : to_vector(t))
    ss += e * e;
  expect_close(linalg::norm(t), {std::sqrt(ss)});
  EXPECT_EQ(linalg::norm(t, std::nullopt, true).shape(), (Shape{1, 1, 1}));
}

TEST(LinalgLapack, MatrixNorms) {
  array m = from_vector({1, -2, 3, -4, 5, -6}, {2, 3});
  expect_close(linalg::norm(m, "fro"), {std::sqrt(91.0)});
  expect_close(linalg::norm(m, 1.0), {9});   // max column sum
  expect_close(linalg::norm(m, -1.0), {5});  // min column sum
  expect_close(linalg::norm(m, INFINITY), {15});
  expect_close(linalg::norm(m, -INFINITY), {6});
  // 2-norm, -2-norm and nuclear norm from the singular values of a diagonal matrix.
  array d = from_vector({3, 0, 0, 0, -2, 0}, {2, 3});
  expect_close(linalg::norm(d, 2.0), {3});
  expect_close(linalg::norm(d, -2.0), {2});
  expect_close(linalg::norm(d, "nuc"), {5});
  // Batched over axes (0, 2) with keepdims.
  array b = random_array({3, 2, 4});
  array got = linalg::norm(b, 1.0, std::vector<int>{0, 2}, true);
  EXPECT_EQ(got.shape(), (Shape{1, 2, 1}));
  auto bv = to_vector(b);
  for (int j = 0; j < 2; ++j) {
    double best = 0;
    for (int k = 0; k < 4; ++k) {
      double col = 0;
      for (int i = 0; i < 3; ++i)
        col += std::abs(bv[i * 8 + j * 4 + k]);
      best = std::max(best, col);
    }
    EXPECT_NEAR(to_vector(got)[j], best, 1e-5);
  }
  EXPECT_EQ(linalg::norm(b, "nuc", std::vector<int>{0, 2}, true).shape(), (Shape{1, 2, 1}));
}

TEST(LinalgLapack, NormErrors) {
  array t = random_array({2, 3, 4});
  EXPECT_THROW(linalg::norm(t, 2.0), std::invalid_argument);  // ord needs 1-D / 2-D
  EXPECT_THROW(linalg::norm(t, "fro", 0), std::invalid_argument);
  EXPECT_THROW(linalg::norm(t, 3.0, std::vector<int>{0, 1}), std::invalid_argument);
  EXPECT_THROW(linalg::norm(t, "bad", std::vector<int>{0, 1}), std::invalid_argument);
  EXPECT_THROW(linalg::norm(t, 2.0, std::vector<int>{1, 1}), std::invalid_argument);
  EXPECT_THROW(linalg::norm(t, 2.0, 3), std::invalid_argument);
}

TEST(LinalgLapack, Cross) {
  array a = from_vector({1, 0, 0, 0, 1, 0}, {2, 3});
  array b = from_vector({0, 1, 0, 0, 0, 1}, {2, 3});
  expect_close(linalg::cross(a, b), {0, 0, 1, 1, 0, 0}, {2, 3});
  // Along axis 0, with broadcasting.
  array c = from_vector({1, 2, 3}, {3, 1});
  array d = from_vector({4, 5, 6, 7, 8, 9}, {3, 2});
  // (1,2,3) x (4,6,8) = (16-18, 12-8, 6-8); (1,2,3) x (5,7,9) = (18-21, 15-9, 7-10)
  expect_close(linalg::cross(c, d, 0), {-2, -3, 4, 6, -2, -3}, {3, 2});
  // A 2-vector has a zero third component: (1,2,0) x (0,0,1) = (2,-1,0).
  expect_close(linalg::cross(from_vector({1, 2}, {2}), from_vector({0, 0, 1}, {3})), {2, -1, 0});
  EXPECT_THROW(linalg::cross(random_array({2, 4}), random_array({2, 4})), std::invalid_argument);
  EXPECT_THROW(linalg::cross(random_array({2, 3}), random_array({3, 3})), std::invalid_argument);
}

TEST(LinalgLapack, Inverse) {
  for (Dtype dt : {float32, float64}) {
    double tol = dt == float32 ? 1e-4 : 1e-10;
    array a = well_conditioned({3, 2}, 5, dt);
    array x = linalg::inv(a);
    EXPECT_EQ(x.dtype(), dt);
    expect_allclose(matmul(a, x), eye_like(a), tol);
    // Transposed (column-major) input.
    array at = mT(a);
    expect_allclose(matmul(at, linalg::inv(at)), eye_like(a), tol);
  }
  // Many matrices (parallel batch).
  array many = well_conditioned({600}, 4, float32, 7);
  expect_allclose(matmul(linalg::inv(many), many), eye_like(many), 1e-4);
  // Triangular inverse reads one triangle only.
  array a = well_conditioned({}, 4, float64);
  array lo = tril(a);
  expect_allclose(linalg::tri_inv(a), linalg::inv(lo), 1e-10);
  expect_allclose(linalg::tri_inv(a, true), linalg::inv(triu(a)), 1e-10);
  // 0-size batch.
  EXPECT_EQ(linalg::inv(zeros({0, 3, 3}, float32)).shape(), (Shape{0, 3, 3}));
}

TEST(LinalgLapack, InverseErrors) {
  EXPECT_THROW(linalg::inv(random_array({3, 4})), std::invalid_argument);
  EXPECT_THROW(linalg::inv(random_array({3})), std::invalid_argument);
  // Integer matrices are promoted to float32 (a singular one fails when evaluated).
  EXPECT_EQ(linalg::inv(eye(3, int32)).dtype(), float32);
  EXPECT_THROW(eval(linalg::inv(zeros({3, 3}, int32))), std::invalid_argument);
  EXPECT_THROW(linalg::inv(zeros({3, 3}, float16)), std::invalid_argument);
  array singular = from_vector({1, 2, 2, 4}, {2, 2});
  EXPECT_THROW(eval(linalg::inv(singular)), std::invalid_argument);
  EXPECT_THROW(eval(linalg::solve(singular, ones({2}, float32))), std::invalid_argument);
}

TEST(LinalgLapack, Cholesky) {
  for (Dtype dt : {float32, float64}) {
    double tol = dt == float32 ? 1e-4 : 1e-10;
    array a = spd({2, 3}, 6, dt);
    array l = linalg::cholesky(a);
    expect_allclose(l, tril(l), 0);
    expect_allclose(matmul(l, mT(l)), a, tol * 10);
    array u = linalg::cholesky(a, true);
    expect_allclose(u, mT(l), tol);
    expect_allclose(linalg::cholesky_inv(l), linalg::inv(a), tol);
    expect_allclose(linalg::cholesky_inv(u, true), linalg::inv(a), tol);
  }
  array not_pd = from_vector({1, 2, 2, 1}, {2, 2});
  EXPECT_THROW(eval(linalg::cholesky(not_pd)), std::invalid_argument);
  EXPECT_THROW(linalg::cholesky(random_array({2, 3})), std::invalid_argument);
}

TEST(LinalgLapack, Solve) {
  for (Dtype dt : {float32, float64}) {
    double tol = dt == float32 ? 1e-4 : 1e-10;
    array a = well_conditioned({4}, 5, dt);
    array b = random_array({4, 5, 3}, dt, -1, 1, 9);
    array x = linalg::solve(a, b);
    expect_allclose(matmul(a, x), b, tol);
    // Vector right-hand sides and a broadcast (unbatched) b.
    array v = random_array({5}, dt, -1, 1, 10);
    array xv = linalg::solve(a, v);
    EXPECT_EQ(xv.shape(), (Shape{4, 5}));
    expect_allclose(squeeze(matmul(a, expand_dims(xv, -1)), -1), broadcast_to(v, {4, 5}), tol);
    array x2 = linalg::solve(slice(a, {0, 0, 0}, {1, 5, 5}), v);
    EXPECT_EQ(x2.shape(), (Shape{1, 5}));
    // Transposed a.
    array xt = linalg::solve(mT(a), b);
    expect_allclose(matmul(mT(a), xt), b, tol);
    // Triangular solve.
    array lo = tril(a);
    expect_allclose(matmul(lo, linalg::solve_triangular(a, b)), b, tol);
    expect_allclose(matmul(triu(a), linalg::solve_triangular(a, b, true)), b, tol);
  }
  EXPECT_THROW(linalg::solve(random_array({3, 3}), random_array({4})), std::invalid_argument);
}

TEST(LinalgLapack, QR) {
  for (Shape shape : {Shape{5, 3}, Shape{3, 5}, Shape{2, 4, 4}}) {
    array a = random_array(shape, float32, -1, 1, 3);
    auto [q, r] = linalg::qr(a);
    int k = std::min(shape[shape.size() - 2], shape.back());
    EXPECT_EQ(q.shape(-1), k);
    EXPECT_EQ(r.shape(-2), k);
    expect_allclose(matmul(q, r), a, 1e-5);
    expect_allclose(matmul(mT(q), q),
                    broadcast_to(identity(k), q.shape().size() == 3 ? Shape{2, k, k} : Shape{k, k}),
                    1e-5);
    expect_allclose(r, triu(r), 0);
  }
}

TEST(LinalgLapack, SVD) {
  for (Shape shape : {Shape{5, 3}, Shape{3, 5}, Shape{2, 4, 4}}) {
    for (Dtype dt : {float32, float64}) {
      double tol = dt == float32 ? 1e-5 : 1e-12;
      array a = random_array(shape, dt, -1, 1, 4);
      auto usv = linalg::svd(a);
      int m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
      EXPECT_EQ(usv[0].shape(-1), m);
      EXPECT_EQ(usv[2].shape(-1), n);
      // A = U[:, :k] diag(S) Vt[:k]
      Shape start(shape.size(), 0);
      Shape u_stop = usv[0].shape(), vt_stop = usv[2].shape();
      u_stop.back() = k;
      vt_stop[shape.size() - 2] = k;
      array us = multiply(slice(usv[0], start, u_stop), expand_dims(usv[1], -2));
      expect_allclose(matmul(us, slice(usv[2], start, vt_stop)), a, tol * 10);
      expect_allclose(linalg::svd(a, false)[0], usv[1], tol * 10);
      // Singular values descending and non-negative.
      auto sv = to_vector(usv[1]);
      for (int i = 1; i < k; ++i)
        EXPECT_GE(sv[i - 1], sv[i]);
      EXPECT_GE(sv[k - 1], 0);
    }
  }
  // pinv: A pinv(A) A = A
  array a = random_array({4, 6}, float32, -1, 1, 5);
  expect_allclose(matmul(matmul(a, linalg::pinv(a)), a), a, 1e-4);
}

TEST(LinalgLapack, Eigh) {
  for (Dtype dt : {float32, float64}) {
    double tol = dt == float32 ? 1e-4 : 1e-10;
    array a = spd({3}, 5, dt);
    auto [w, v] = linalg::eigh(a);
    EXPECT_EQ(w.shape(), (Shape{3, 5}));
    expect_allclose(matmul(a, v), multiply(v, expand_dims(w, -2)), tol * 10);
    expect_allclose(linalg::eigvalsh(a), w, tol);
    // Only the chosen triangle is read.
    expect_allclose(linalg::eigvalsh(tril(a), "L"), w, tol);
    expect_allclose(linalg::eigvalsh(triu(a), "U"), w, tol);
    auto wv = to_vector(w);
    for (int i = 1; i < 5; ++i)
      EXPECT_LE(wv[i - 1], wv[i]);
  }
  EXPECT_THROW(linalg::eigh(random_array({3, 3}), "X"), std::invalid_argument);
}

TEST(LinalgLapack, Eig) {
  // Rotation by 90 degrees: eigenvalues +-i.
  array r = from_vector({0, -1, 1, 0}, {2, 2});
  auto [w, v] = linalg::eig(r);
  EXPECT_EQ(w.dtype(), complex64);
  array rc = astype(r, complex64);
  array lhs = matmul(rc, v);
  array rhs = multiply(v, expand_dims(w, -2));
  EXPECT_TRUE(allclose(lhs, rhs, 1e-5, 1e-5).item<bool>());
  array a = well_conditioned({2}, 4, float32);
  auto [w2, v2] = linalg::eig(a);
  EXPECT_TRUE(
      allclose(matmul(astype(a, complex64), v2), multiply(v2, expand_dims(w2, -2)), 1e-4, 1e-4)
          .item<bool>());
  EXPECT_EQ(linalg::eigvals(a).shape(), (Shape{2, 4}));
}

TEST(LinalgLapack, LU) {
  for (Shape shape : {Shape{4, 4}, Shape{5, 3}, Shape{3, 5}, Shape{2, 4, 4}}) {
    array a = random_array(shape, float32, -1, 1, 6);
    auto plu = linalg::lu(a);
    array l = plu[1], u = plu[2];
    array rebuilt = matmul(take_along_axis(l, expand_dims(astype(plu[0], int32), -1), -2), u);
    expect_allclose(rebuilt, a, 1e-5);
    expect_allclose(l, add(tril(l, -1), eye(l.shape(-2), l.shape(-1), 0, float32)), 0);
    auto [lu, piv] = linalg::lu_factor(a);
    EXPECT_EQ(piv.dtype(), uint32);
    EXPECT_EQ(piv.shape(-1), std::min(shape[shape.size() - 2], shape.back()));
  }
}

TEST(LinalgLapack, EmptyInputs) {
  auto plu = linalg::lu(zeros({2, 3, 0}, float32));
  expect_close(plu[0], {0, 1, 2, 0, 1, 2}, {2, 3});
  EXPECT_EQ(linalg::svd(zeros({0, 3, 2}, float32))[0].shape(), (Shape{0, 3, 3}));
  EXPECT_EQ(linalg::qr(zeros({0, 3, 2}, float32)).second.shape(), (Shape{0, 2, 2}));
  EXPECT_EQ(linalg::cholesky(zeros({0, 2, 2}, float32)).shape(), (Shape{0, 2, 2}));
}

TEST(LinalgLapack, Det) {
  // Row swap: det = -(1*4 - ... ) of [[0, 2], [3, 1]] = -6.
  array a = from_vector({0, 2, 3, 1}, {2, 2});
  expect_close(linalg::det(a), {-6});
  auto [sign, logabs] = linalg::slogdet(a);
  expect_close(sign, {-1});
  expect_close(logabs, {std::log(6.0)});
  // Batched: det(A B) = det(A) det(B).
  array x = well_conditioned({3}, 4, float64, 11);
  array y = well_conditioned({3}, 4, float64, 12);
  expect_allclose(linalg::det(matmul(x, y)), multiply(linalg::det(x), linalg::det(y)), 1e-9);
  EXPECT_THROW(linalg::det(random_array({2, 3})), std::invalid_argument);
}

TEST(LinalgLapack, Vmap) {
  array a = well_conditioned({3}, 4, float32);
  // Map over axis 1 of a (3 moved there).
  array moved = moveaxis(a, 0, 1);
  auto f = vmap([](const array& x) { return linalg::inv(x); }, 1, 0);
  expect_allclose(f(moved), linalg::inv(a), 1e-5);
  auto g = vmap([](const array& x) { return linalg::cholesky(x); }, 0, 0);
  array s = spd({3}, 4, float32);
  expect_allclose(g(s), linalg::cholesky(s), 1e-5);
  auto qr_r = vmap([](const array& x) { return linalg::qr(x).second; }, 0, 0);
  expect_allclose(qr_r(a), linalg::qr(a).second, 1e-5);
  auto sv = vmap([](const array& x) { return linalg::svd(x, false)[0]; }, 0, 0);
  expect_allclose(sv(a), linalg::svd(a, false)[0], 1e-5);
  auto ev = vmap([](const array& x) { return linalg::eigvalsh(x); }, 0, 0);
  expect_allclose(ev(s), linalg::eigvalsh(s), 1e-4);
  array b = random_array({4, 2}, float32);
  auto sol = vmap([&](const array& x) { return linalg::solve(x, b); }, 0, 0);
  expect_allclose(sol(a), linalg::solve(a, b), 1e-5);
}

// Central finite difference of sum(w * f(x)) in direction d.
double directional(const std::function<array(const array&)>& f, const array& x, const array& w,
                   const array& d, double h = 1e-6) {
  auto val = [&](const array& y) { return sum(multiply(w, f(y))).item<double>(); };
  return (val(add(x, multiply(d, array(h)))) - val(subtract(x, multiply(d, array(h))))) / (2 * h);
}

void check_grad(const std::function<array(const array&)>& f, const array& x, uint32_t seed) {
  array w = random_array(f(x).shape(), float64, -1, 1, seed);
  array d = random_array(x.shape(), float64, -1, 1, seed + 1);
  auto gfn = grad([&](const array& y) { return sum(multiply(w, f(y))); });
  double analytic = sum(multiply(gfn(x), d)).item<double>();
  EXPECT_NEAR(analytic, directional(f, x, w, d), 1e-5 * (1 + std::abs(analytic)));
}

TEST(LinalgLapack, Gradients) {
  array a = well_conditioned({2}, 4, float64);
  check_grad([](const array& x) { return linalg::inv(x); }, a, 20);
  check_grad([](const array& x) { return linalg::tri_inv(x); }, a, 21);
  check_grad([](const array& x) { return linalg::tri_inv(x, true); }, a, 22);
  array b = random_array({2, 4, 3}, float64, -1, 1, 23);
  check_grad([&](const array& x) { return linalg::solve(x, b); }, a, 24);
  check_grad([&](const array& y) { return linalg::solve(a, y); }, b, 25);
  // Cholesky through a symmetric parametrization x -> x x^T + n I.
  auto sym = [](const array& x) {
    return add(matmul(x, mT(x)), multiply(identity(4, float64), array(4.0)));
  };
  array r = random_array({2, 4, 4}, float64, -1, 1, 26);
  check_grad([&](const array& x) { return linalg::cholesky(sym(x)); }, r, 27);
  check_grad([&](const array& x) { return linalg::cholesky(sym(x), true); }, r, 28);
  // eigh through the same parametrization; squared eigenvectors are sign-invariant.
  check_grad([&](const array& x) { return linalg::eigvalsh(sym(x)); }, r, 30);
  check_grad([&](const array& x) { return square(linalg::eigh(sym(x)).second); }, r, 31);
  check_grad(
      [&](const array& x) {
        auto [w, v] = linalg::eigh(sym(x), "U");
        return add(expand_dims(w, -1), square(v));
      },
      r, 32);
  // jvp of inv against the vjp-checked identity d(inv) = -X dA X.
  array t = random_array({2, 4, 4}, float64, -1, 1, 29);
  auto [outs, tans] =
      jvp([](const std::vector<array>& xs) { return std::vector<array>{linalg::inv(xs[0])}; }, {a},
          {t});
  array x = linalg::inv(a);
  expect_allclose(tans[0], negative(matmul(matmul(x, t), x)), 1e-10);
  // Factorizations without derivative rules say so.
  EXPECT_THROW(grad([](const array& x) { return sum(linalg::svd(x, false)[0]); })(a),
               std::invalid_argument);
  EXPECT_THROW(grad([](const array& x) { return sum(linalg::qr(x).first); })(a),
               std::invalid_argument);
}

}  // namespace
}  // namespace mlx::core::test
