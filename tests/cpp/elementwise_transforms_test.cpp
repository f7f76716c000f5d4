// Transform rules of the elementwise and creation primitives: derivatives against finite
// differences and analytic formulas, vmap against a loop.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <string>
#include <vector>

#include "mlx/mlx.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

using Fn1 = std::function<array(const array&)>;
using Fn2 = std::function<array(const array&, const array&)>;

struct UnaryCase {
  const char* name;
  Fn1 fn;
  double lo, hi;  // a domain where the op is smooth
};

std::vector<UnaryCase> differentiable_unary() {
  return {
      {"abs", [](const array& x) { return abs(x); }, -1, 1},
      {"negative", [](const array& x) { return negative(x); }, -1, 1},
      {"square", [](const array& x) { return square(x); }, -1, 1},
      {"sqrt", [](const array& x) { return sqrt(x); }, 0.5, 2},
      {"rsqrt", [](const array& x) { return rsqrt(x); }, 0.5, 2},
      {"exp", [](const array& x) { return exp(x); }, -1, 1},
      {"expm1", [](const array& x) { return expm1(x); }, -1, 1},
      {"log", [](const array& x) { return log(x); }, 0.5, 2},
      {"log2", [](const array& x) { return log2(x); }, 0.5, 2},
      {"log10", [](const array& x) { return log10(x); }, 0.5, 2},
      {"log1p", [](const array& x) { return log1p(x); }, -0.5, 1},
      {"sin", [](const array& x) { return sin(x); }, -2, 2},
      {"cos", [](const array& x) { return cos(x); }, -2, 2},
      {"tan", [](const array& x) { return tan(x); }, -1.2, 1.2},
      {"arcsin", [](const array& x) { return arcsin(x); }, -0.9, 0.9},
      {"arccos", [](const array& x) { return arccos(x); }, -0.9, 0.9},
      {"arctan", [](const array& x) { return arctan(x); }, -2, 2},
      {"sinh", [](const array& x) { return sinh(x); }, -2, 2},
      {"cosh", [](const array& x) { return cosh(x); }, -2, 2},
      {"tanh", [](const array& x) { return tanh(x); }, -2, 2},
      {"arcsinh", [](const array& x) { return arcsinh(x); }, -2, 2},
      {"arccosh", [](const array& x) { return arccosh(x); }, 1.2, 3},
      {"arctanh", [](const array& x) { return arctanh(x); }, -0.9, 0.9},
      {"erf", [](const array& x) { return erf(x); }, -2, 2},
      {"erfinv", [](const array& x) { return erfinv(x); }, -0.9, 0.9},
      {"sigmoid", [](const array& x) { return sigmoid(x); }, -3, 3},
  };
}

// Ops whose derivative is zero everywhere it exists (float results).
std::vector<UnaryCase> piecewise_constant_unary() {
  return {
      {"sign", [](const array& x) { return sign(x); }, -2, 2},
      {"floor", [](const array& x) { return floor(x); }, -2, 2},
      {"ceil", [](const array& x) { return ceil(x); }, -2, 2},
      {"round", [](const array& x) { return round(x); }, -2, 2},
      {"trunc", [](const array& x) { return trunc(x); }, -2, 2},
  };
}

struct BinaryCase {
  const char* name;
  Fn2 fn;
  double alo, ahi, blo, bhi;
};

std::vector<BinaryCase> differentiable_binary() {
  return {
      {"add", [](const array& a, const array& b) { return add(a, b); }, -1, 1, -1, 1},
      {"subtract", [](const array& a, const array& b) { return subtract(a, b); }, -1, 1, -1, 1},
      {"multiply", [](const array& a, const array& b) { return multiply(a, b); }, -1, 1, -1, 1},
      {"divide", [](const array& a, const array& b) { return divide(a, b); }, -1, 1, 0.5, 2},
      {"remainder", [](const array& a, const array& b) { return remainder(a, b); }, -3, 3, 0.7,
       1.5},
      {"power", [](const array& a, const array& b) { return power(a, b); }, 0.5, 2, -1.5, 1.5},
      {"maximum", [](const array& a, const array& b) { return maximum(a, b); }, -1, 1, -1, 1},
      {"minimum", [](const array& a, const array& b) { return minimum(a, b); }, -1, 1, -1, 1},
      {"logaddexp", [](const array& a, const array& b) { return logaddexp(a, b); }, -2, 2, -2, 2},
      {"arctan2", [](const array& a, const array& b) { return arctan2(a, b); }, -1, 1, -1, 1},
  };
}

ArrayFn as_fn(const Fn1& f) {
  return [f](const std::vector<array>& x) { return std::vector<array>{f(x[0])}; };
}
ArrayFn as_fn(const Fn2& f) {
  return [f](const std::vector<array>& x) { return std::vector<array>{f(x[0], x[1])}; };
}

TEST(ElementwiseRules, UnaryGradients) {
  for (auto& c : differentiable_unary()) {
    SCOPED_TRACE(c.name);
    check_grad(as_fn(c.fn), {random_array({2, 3}, float64, c.lo, c.hi, 1)});
    check_grad(as_fn(c.fn), {random_array({}, float64, c.lo, c.hi, 2)});
    // A non-contiguous view made inside f.
    check_grad(
        [&c](const std::vector<array>& x) { return std::vector<array>{c.fn(transpose(x[0]))}; },
        {random_array({3, 1, 2}, float64, c.lo, c.hi, 3)});
  }
}

TEST(ElementwiseRules, BinaryGradients) {
  for (auto& c : differentiable_binary()) {
    SCOPED_TRACE(c.name);
    array a = random_array({2, 3}, float64, c.alo, c.ahi, 4);
    array b = random_array({2, 3}, float64, c.blo, c.bhi, 5);
    check_grad(as_fn(c.fn), {a, b});
    // b broadcast along the rows.
    check_grad(as_fn(c.fn), {a, random_array({3}, float64, c.blo, c.bhi, 6)});
    // a broadcast from a scalar, b a transposed view.
    check_grad(
        [&c](const std::vector<array>& x) {
          return std::vector<array>{c.fn(x[0], transpose(x[1]))};
        },
        {random_array({}, float64, c.alo, c.ahi, 7),
         random_array({3, 2}, float64, c.blo, c.bhi, 8)});
  }
}

// vjp and jvp of f at x are zeros of x's shape (f elementwise).
void expect_zero_derivatives(const ArrayFn& f, const std::vector<array>& x) {
  std::vector<array> outs = f(x);
  std::vector<array> cts, ts;
  for (auto& o : outs) {
    cts.push_back(ones_like(o));
  }
  for (auto& a : x) {
    ts.push_back(ones_like(a));
  }
  for (auto& g : vjp(f, x, cts).second) {
    expect_close(g, std::vector<double>(g.size(), 0.0));
  }
  auto tangents = jvp(f, x, ts).second;
  for (size_t j = 0; j < outs.size(); ++j) {
    EXPECT_EQ(tangents[j].shape(), outs[j].shape());
    expect_close(tangents[j], std::vector<double>(tangents[j].size(), 0.0));
  }
}

TEST(ElementwiseRules, PiecewiseConstantUnary) {
  for (auto& c : piecewise_constant_unary()) {
    SCOPED_TRACE(c.name);
    array x = random_array({2, 3}, float64, c.lo, c.hi, 15);
    expect_zero_derivatives(as_fn(c.fn), {x});
    check_vmap(as_fn(c.fn), {x}, {1}, {1});
  }
}

TEST(ElementwiseRules, SecondDerivatives) {
  array x = random_array({5}, float64, -2, 2, 9);
  auto v = to_vector(x);
  // For elementwise f, the vjp with a cotangent of ones is f' elementwise.
  auto d = [](Fn1 f) { return [f](const array& a) { return vjp(f, a, ones_like(a)).second; }; };
  auto g_tanh = d(d([](const array& a) { return tanh(a); }));
  auto g_xsin = d(d([](const array& a) { return multiply(a, sin(a)); }));
  std::vector<double> e_tanh, e_xsin;
  for (double t : v) {
    double th = std::tanh(t);
    e_tanh.push_back(-2 * th * (1 - th * th));
    e_xsin.push_back(2 * std::cos(t) - t * std::sin(t));
  }
  expect_close(g_tanh(x), e_tanh, 1e-10, 1e-10);
  expect_close(g_xsin(x), e_xsin, 1e-10, 1e-10);
}

TEST(ElementwiseRules, BinaryVmap) {
  for (auto& c : differentiable_binary()) {
    SCOPED_TRACE(c.name);
    auto f = as_fn(c.fn);
    array a = random_array({3, 4}, float32, c.alo, c.ahi, 10);
    array b = random_array({3, 4}, float32, c.blo, c.bhi, 11);
    check_vmap(f, {a, b}, {0, 0});
    check_vmap(f, {a, transpose(b)}, {1, 0}, {1});
    check_vmap(f, {a, random_array({3}, float32, c.blo, c.bhi, 12)}, {1, -1});
    check_vmap(f, {random_array({4}, float32, c.alo, c.ahi, 13), b}, {-1, 0}, {1});
  }
}

TEST(ElementwiseRules, UnaryVmap) {
  for (auto& c : differentiable_unary()) {
    SCOPED_TRACE(c.name);
    array x = random_array({3, 4}, float32, c.lo, c.hi, 14);
    check_vmap(as_fn(c.fn), {x}, {0});
    check_vmap(as_fn(c.fn), {x}, {1}, {1});
  }
}

}  // namespace
}  // namespace mlx::core::test
