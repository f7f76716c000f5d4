// Transform rules of the elementwise and creation primitives: derivatives against finite
// differences and analytic formulas, vmap against a loop.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <string>
#include <vector>

#include "mlx/mlx.h"
#include "mlx/primitives/elementwise.h"
#include "mlx/runtime/kernel_counter.h"
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
      {"gelu", [](const array& x) { return gelu(x); }, -3, 3},
      {"gelu_approx", [](const array& x) { return gelu_approx(x); }, -3, 3},
      {"silu", [](const array& x) { return silu(x); }, -3, 3},
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
      // The activations' vjps g f'(x): their own rules hold f''(x) (second derivatives).
      {"gelu_vjp", [](const array& x, const array& g) { return gelu_vjp(x, g); }, -3, 3, -1, 1},
      {"gelu_approx_vjp", [](const array& x, const array& g) { return gelu_approx_vjp(x, g); }, -3,
       3, -1, 1},
      {"silu_vjp", [](const array& x, const array& g) { return silu_vjp(x, g); }, -3, 3, -1, 1},
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
  // Forward over reverse gives the same second derivative.
  auto fwd = [&](const array& a) {
    return jvp(d([](const array& b) { return tanh(b); }), a, ones_like(a)).second;
  };
  expect_close(fwd(x), e_tanh, 1e-10, 1e-10);
}

// The vjp of f with a fixed cotangent, as a function of f's inputs.
ArrayFn vjp_fn(const ArrayFn& f, const std::vector<array>& cotangents) {
  return [f, cotangents](const std::vector<array>& x) { return vjp(f, x, cotangents).second; };
}

// Every rule's graph is itself differentiable and vectorizable.
TEST(ElementwiseRules, UnaryRulesAreDifferentiable) {
  for (auto& c : differentiable_unary()) {
    SCOPED_TRACE(c.name);
    array x = random_array({2, 3}, float64, c.lo, c.hi, 16);
    array ct = random_array({2, 3}, float64, -1, 1, 17);
    check_grad(vjp_fn(as_fn(c.fn), {ct}), {x});
    check_vmap(vjp_fn(as_fn(c.fn), {take(ct, 0, 0)}), {x}, {0}, {1});
  }
}

TEST(ElementwiseRules, BinaryRulesAreDifferentiable) {
  for (auto& c : differentiable_binary()) {
    SCOPED_TRACE(c.name);
    array a = random_array({2, 3}, float64, c.alo, c.ahi, 18);
    array b = random_array({2, 3}, float64, c.blo, c.bhi, 19);
    array ct = random_array({2, 3}, float64, -1, 1, 20);
    check_grad(vjp_fn(as_fn(c.fn), {ct}), {a, b});
    check_vmap(vjp_fn(as_fn(c.fn), {take(ct, 0, 1)}), {a, b}, {1, 1}, {0, 1});
  }
}

// An activation's vjp and jvp are one kernel each, g f'(x), not f'(x) and then a product.
TEST(ElementwiseRules, ActivationDerivativesAreOneKernel) {
  array x = random_array({4, 5}, float32, -3, 3, 40);
  array g = random_array({4, 5}, float32, -1, 1, 41);
  eval(x, g);
  const std::pair<Fn1, const char*> cases[] = {
      {[](const array& a) { return gelu(a); }, "GeluVjp"},
      {[](const array& a) { return gelu_approx(a); }, "GeluApproxVjp"},
      {[](const array& a) { return silu(a); }, "SiluVjp"},
  };
  for (auto& [f, kernel] : cases) {
    SCOPED_TRACE(kernel);
    for (bool forward : {false, true}) {
      auto [value, d] = forward ? jvp(f, x, g) : vjp(f, x, g);
      // On a GPU stream vjp starts computing f(x) while it builds the backward (its forward
      // overlap): f(x) is done before the count starts.
      eval(value);
      core::detail::kernel_counts(true);
      core::detail::set_kernel_counting(true);
      eval(d);
      core::detail::set_kernel_counting(false);
      std::string ran;
      for (auto& [name, c] : core::detail::kernel_counts(true)) {
        ran += name + " x" + std::to_string(c.count) + "; ";
      }
      EXPECT_EQ(ran, std::string(kernel) + " x1; ");
    }
  }
}

// Vectorized over either operand or both, with the batch axis anywhere.
TEST(ElementwiseRules, ActivationVjpsVmap) {
  array x = random_array({3, 4}, float32, -3, 3, 42);
  array g = random_array({4, 3}, float32, -1, 1, 43);
  for (auto& c : differentiable_binary()) {
    if (std::string(c.name).find("_vjp") == std::string::npos) {
      continue;
    }
    SCOPED_TRACE(c.name);
    auto f = as_fn(c.fn);
    check_vmap(f, {x, g}, {0, 1});
    check_vmap(f, {x, g}, {1, 0}, {1});
    check_vmap(f, {x, take(g, 0, 0)}, {1, -1});
    check_vmap(f, {take(x, 0, 1), g}, {-1, 0}, {1});
  }
}

TEST(ElementwiseRules, BinaryGradientsOfSizeOneAxes) {
  for (auto& c : differentiable_binary()) {
    SCOPED_TRACE(c.name);
    // (2, 1) against (1, 3): both inputs broadcast.
    check_grad(as_fn(c.fn), {random_array({2, 1}, float64, c.alo, c.ahi, 21),
                             random_array({1, 3}, float64, c.blo, c.bhi, 22)});
    // Axes swapped inside f, against a broadcast value.
    check_grad(
        [&c](const std::vector<array>& x) {
          return std::vector<array>{c.fn(swapaxes(x[0], 0, 2), x[1])};
        },
        {random_array({2, 1, 3}, float64, c.alo, c.ahi, 23),
         random_array({1, 2}, float64, c.blo, c.bhi, 24)});
  }
}

TEST(ElementwiseRules, EmptyArrays) {
  array x = zeros({0, 3}, float64);
  auto g = vjp([](const array& a) { return multiply(exp(a), a); }, x, x).second;
  EXPECT_EQ(g.shape(), (Shape{0, 3}));
  auto t = jvp([](const array& a) { return sin(a); }, x, x).second;
  EXPECT_EQ(t.shape(), (Shape{0, 3}));
}

TEST(ElementwiseRules, MaximumMinimumTiesGoToFirstInput) {
  array a = array({1.0, -2.0, 3.0}, float64);
  auto both = [](Fn2 f) {
    return [f](const std::vector<array>& x) { return std::vector<array>{f(x[0], x[1])}; };
  };
  for (Fn2 f : {Fn2([](const array&x, const array&y) { return maximum(x, y); }),
                Fn2([](const array&x, const array&y) { return minimum(x, y); })}) {
    auto g = vjp(both(f), {a, a}, {array({1.0, 2.0, 3.0}, float64)}).second;
    expect_close(g[0], {1, 2, 3});
    expect_close(g[1], {0, 0, 0});
  }
  // Away from ties the larger (smaller) input gets everything.
  array b = array({0.0, 5.0, 3.5}, float64);
  auto gmax = vjp(both([](const array& x, const array& y) { return maximum(x, y); }), {a, b},
                  {ones({3}, float64)})
                  .second;
  expect_close(gmax[0], {1, 0, 0});
  expect_close(gmax[1], {0, 1, 1});
  auto gmin = vjp(both([](const array& x, const array& y) { return minimum(x, y); }), {a, b},
                  {ones({3}, float64)})
                  .second;
  expect_close(gmin[0], {0, 1, 1});
  expect_close(gmin[1], {1, 0, 0});
}

TEST(ElementwiseRules, PowerAtNegativeBase) {
  // d/da = b a^(b-1) stays finite; d/db = log(a) a^b is NaN where log is.
  array a = array({-2.0, -2.0, 0.5}, float64);
  array b = array({2.0, 3.0, 2.0}, float64);
  auto g = vjp(as_fn(Fn2([](const array& x, const array& y) { return power(x, y); })), {a, b},
               {ones({3}, float64)})
               .second;
  expect_close(g[0], {-4, 12, 1});
  expect_close(g[1], {NAN, NAN, std::log(0.5) * 0.25});
}

TEST(ElementwiseRules, ZeroGradientBinary) {
  array a = random_array({2, 3}, float64, -3, 3, 25);
  array b = random_array({3}, float64, 0.5, 2, 26);
  expect_zero_derivatives(
      as_fn(Fn2([](const array& x, const array& y) { return floor_divide(x, y); })), {a, b});
  // Comparisons feed a float computation through a mask.
  auto masked = [](const std::vector<array>& x) {
    array m = astype(less(x[0], x[1]), float64);
    return std::vector<array>{multiply(m, x[0])};
  };
  check_grad(masked, {a, b});
}

// Rules of ops with bool or integer results, called directly: zero cotangents of the inputs'
// shapes and dtypes, zero tangents of the output's.
TEST(ElementwiseRules, NonDifferentiableOutputsGiveZeros) {
  array x = random_array({2, 3}, float64, -2, 2, 27);
  array y = random_array({2, 3}, float64, -2, 2, 28);
  std::vector<array> outs = {
      logical_not(x),    isnan(x),         isinf(x),           isposinf(x),
      isneginf(x),       isfinite(x),      equal(x, y),        not_equal(x, y),
      less(x, y),        less_equal(x, y), greater(x, y),      greater_equal(x, y),
      logical_and(x, y), logical_or(x, y), floor_divide(x, y), sign(x)};
  for (auto& o : outs) {
    SCOPED_TRACE(o.primitive().name());
    const auto& in = o.inputs();
    std::vector<int> argnums;
    std::vector<array> tangents;
    for (size_t i = 0; i < in.size(); ++i) {
      argnums.push_back(static_cast<int>(i));
      tangents.push_back(ones_like(in[i]));
    }
    auto cts = o.primitive().vjp(in, {ones_like(o)}, argnums, {o});
    ASSERT_EQ(cts.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ(cts[i].dtype(), in[i].dtype());
      expect_close(cts[i], std::vector<double>(6, 0.0), in[i].shape());
    }
    auto ts = o.primitive().jvp(in, tangents, argnums);
    ASSERT_EQ(ts.size(), 1u);
    EXPECT_EQ(ts[0].dtype(), o.dtype());
    expect_close(ts[0], std::vector<double>(6, 0.0), o.shape());
  }
}

TEST(ElementwiseRules, PredicateAndLogicalVmap) {
  array x = array({NAN, INFINITY, -INFINITY, 0.0f, -1.5f, 2.0f}, {3, 2});
  for (Fn1 f :
       {Fn1([](const array& a) { return logical_not(a); }),
        Fn1([](const array& a) { return isnan(a); }), Fn1([](const array& a) { return isinf(a); }),
        Fn1([](const array& a) { return isposinf(a); }),
        Fn1([](const array& a) { return isneginf(a); }),
        Fn1([](const array& a) { return isfinite(a); })}) {
    check_vmap(as_fn(f), {x}, {0});
    check_vmap(as_fn(f), {x}, {1}, {1});
  }
  array i = astype(random_array({3, 4}, float32, -50, 50, 29), int32);
  check_vmap(as_fn(Fn1([](const array& a) { return bitwise_invert(a); })), {i}, {1}, {1});
}

TEST(ElementwiseRules, ComparisonAndIntegerBinaryVmap) {
  array a = random_array({3, 4}, float32, -2, 2, 30);
  array b = random_array({4, 3}, float32, -2, 2, 31);
  array ia = astype(random_array({3, 4}, float32, -40, 40, 32), int32);
  array ib = astype(random_array({4, 3}, float32, 1, 5, 33), int32);
  auto nan_equal = [](const array& x, const array& y) {
    return array(x.shape(), bool_,
                 std::make_shared<Binary>(default_stream(default_device()), BinaryOp::NaNEqual),
                 {x, y});
  };
  std::vector<std::pair<const char*, Fn2>> float_ops = {
      {"floor_divide", [](const array& x, const array& y) { return floor_divide(x, y); }},
      {"equal", [](const array& x, const array& y) { return equal(x, y); }},
      {"not_equal", [](const array& x, const array& y) { return not_equal(x, y); }},
      {"less", [](const array& x, const array& y) { return less(x, y); }},
      {"less_equal", [](const array& x, const array& y) { return less_equal(x, y); }},
      {"greater", [](const array& x, const array& y) { return greater(x, y); }},
      {"greater_equal", [](const array& x, const array& y) { return greater_equal(x, y); }},
      {"logical_and", [](const array& x, const array& y) { return logical_and(x, y); }},
      {"logical_or", [](const array& x, const array& y) { return logical_or(x, y); }},
      {"logical_xor", [](const array& x, const array& y) { return logical_xor(x, y); }},
      {"nan_equal", nan_equal},
  };
  std::vector<std::pair<const char*, Fn2>> int_ops = {
      {"bitwise_and", [](const array& x, const array& y) { return bitwise_and(x, y); }},
      {"bitwise_or", [](const array& x, const array& y) { return bitwise_or(x, y); }},
      {"bitwise_xor", [](const array& x, const array& y) { return bitwise_xor(x, y); }},
      {"left_shift", [](const array& x, const array& y) { return left_shift(x, y); }},
      {"right_shift", [](const array& x, const array& y) { return right_shift(x, y); }},
      {"remainder", [](const array& x, const array& y) { return remainder(x, y); }},
      {"floor_divide", [](const array& x, const array& y) { return floor_divide(x, y); }},
  };
  auto run = [](const std::vector<std::pair<const char*, Fn2>>& ops, const array& x,
                const array& y) {
    for (auto& [name, fn] : ops) {
      SCOPED_TRACE(name);
      auto f = as_fn(fn);
      check_vmap(f, {x, y}, {0, 1});
      check_vmap(f, {x, y}, {1, 0}, {1});
      check_vmap(f, {x, take(y, 0, 0)}, {1, -1});
      check_vmap(f, {take(x, 0, 1), y}, {-1, 0}, {1});
    }
  };
  run(float_ops, a, b);
  run(int_ops, ia, ib);
}

TEST(ElementwiseRules, VmapOfHigherRankInputs) {
  array a = random_array({2, 3, 4}, float32, -1, 1, 34);
  array b = random_array({4, 2, 3}, float32, 0.5, 2, 35);
  auto f = as_fn(Fn2([](const array& x, const array& y) { return divide(x, y); }));
  check_vmap(f, {a, b}, {2, 0}, {2});
  check_vmap(f, {a, take(b, 0, 0)}, {2, -1}, {1});
  // Nested vmap of a binary op.
  auto inner = vmap(f, {0, -1});
  check_vmap(inner, {a, random_array({4}, float32, 0.5, 2, 36)}, {1, -1}, {1});
}

TEST(ElementwiseRules, DivMod) {
  auto f = [](const std::vector<array>& x) { return divmod(x[0], x[1]); };
  array a = random_array({2, 3}, float64, -3, 3, 37);
  array b = random_array({3}, float64, 0.7, 1.5, 38);
  check_grad(f, {a, b});
  check_grad(f, {random_array({}, float64, -3, 3, 39), random_array({}, float64, 0.7, 1.5, 40)});
  // The quotient has zero derivative, the remainder's matches remainder's.
  auto [outs, cts] = vjp(f, {a, b}, {ones({2, 3}, float64), zeros({2, 3}, float64)});
  expect_close(cts[0], std::vector<double>(6, 0.0), {2, 3});
  expect_close(cts[1], std::vector<double>(3, 0.0), {3});
  auto r = as_fn(Fn2([](const array& x, const array& y) { return remainder(x, y); }));
  array w = random_array({2, 3}, float64, -1, 1, 41);
  auto expected = vjp(r, {a, b}, {w}).second;
  auto got = vjp(f, {a, b}, {zeros({2, 3}, float64), w}).second;
  expect_close(got[0], to_vector(expected[0]), {2, 3});
  expect_close(got[1], to_vector(expected[1]), {3});
  auto tangents = jvp(f, {a, b}, {ones_like(a), ones_like(b)}).second;
  expect_close(tangents[0], std::vector<double>(6, 0.0), {2, 3});
  check_vmap(f, {a, b}, {0, -1}, {1, 0});
  check_vmap(f, {a, transpose(random_array({2, 3}, float64, 0.7, 1.5, 42))}, {0, 1});
}

TEST(ElementwiseRules, Select) {
  array cond = array({true, false, false, true, true, false}, {2, 3});
  auto f = [cond](const std::vector<array>& x) {
    return std::vector<array>{where(cond, transpose(x[0]), x[1])};
  };
  array x = random_array({3, 2}, float64, -1, 1, 43);
  array y = random_array({3}, float64, -1, 1, 44);
  check_grad(f, {x, y});
  // The cotangent goes to x where the condition holds and to y elsewhere.
  auto cts = vjp(f, {x, y}, {array({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3}, float64)}).second;
  expect_close(cts[0], {1, 4, 0, 5, 0, 0}, {3, 2});
  expect_close(cts[1], {0, 2, 9}, {3});
  // A data-dependent condition: |x| as a select.
  auto abs_by_select = [](const std::vector<array>& a) {
    return std::vector<array>{where(greater(a[0], array(0.0)), a[0], negative(a[0]))};
  };
  check_grad(abs_by_select, {random_array({5}, float64, -1, 1, 45)});
  auto g = [](const std::vector<array>& a) { return std::vector<array>{where(a[0], a[1], a[2])}; };
  array c =
      array({true, false, true, false, true, true, false, false, true, false, true, false}, {3, 4});
  array p = random_array({4, 3}, float32, -1, 1, 46);
  array q = random_array({4}, float32, -1, 1, 47);
  check_vmap(g, {c, p, q}, {0, 1, -1}, {1});
  check_vmap(g, {take(c, 0, 1), p, transpose(p)}, {-1, 0, 1});
  check_vmap(g, {c, take(p, 0, 1), q}, {0, -1, -1});
  // The rule itself gives the (bool) condition a zero cotangent.
  array out = where(c, transpose(p), q);
  auto direct = out.primitive().vjp(out.inputs(), {ones_like(out)}, {0, 1, 2}, {out});
  EXPECT_EQ(direct[0].dtype(), bool_);
  expect_close(direct[0], std::vector<double>(12, 0.0), {3, 4});
}

TEST(ElementwiseRules, Full) {
  auto f = [](const std::vector<array>& x) { return std::vector<array>{full({2, 3}, x[0])}; };
  // The cotangent sums over the broadcast axes of the fill value.
  check_grad(f, {random_array({3}, float64, -1, 1, 48)});
  check_grad(f, {random_array({}, float64, -1, 1, 49)});
  check_grad(f, {random_array({2, 1}, float64, -1, 1, 50)});
  auto cast = [](const std::vector<array>& x) {
    return std::vector<array>{full({2, 2}, x[0], float32)};
  };
  check_grad(cast, {random_array({2}, float64, -1, 1, 51)},
             {.argnums = {}, .eps = 1e-3, .rtol = 1e-3});
  auto g = [](const std::vector<array>& x) {
    return std::vector<array>{multiply(full({2, 3}, x[0]), x[0])};
  };
  check_vmap(g, {random_array({4, 3}, float32, -1, 1, 52)}, {0}, {1});
  check_vmap(g, {random_array({3, 4}, float32, -1, 1, 53)}, {1}, {2});
}

// Complex numbers: the bilinear convention documented in elementwise_rules.cpp.
array make_complex(const std::vector<double>& re, const std::vector<double>& im) {
  Shape shape{static_cast<int>(re.size())};
  array i(std::complex<float>(0.0f, 1.0f));
  return add(from_vector(re, shape, complex64), multiply(from_vector(im, shape, complex64), i));
}

void expect_complex(const array& z, const std::vector<std::complex<double>>& expected) {
  ASSERT_EQ(z.dtype(), complex64);
  std::vector<double> re, im;
  for (auto& e : expected) {
    re.push_back(e.real());
    im.push_back(e.imag());
  }
  expect_close(real(z), re);
  expect_close(imag(z), im);
}

TEST(ElementwiseRules, ComplexConventions) {
  std::vector<double> zr{0.5, -1.0, 2.0}, zi{1.0, 0.25, -0.5}, cr{1.0, -2.0, 0.5},
      ci{0.5, 1.0, -1.5};
  array z = make_complex(zr, zi);
  array ct = make_complex(cr, ci);
  array ct_real = from_vector(cr, {3});
  std::vector<std::complex<double>> zc, cc;
  for (int k = 0; k < 3; ++k) {
    zc.emplace_back(zr[k], zi[k]);
    cc.emplace_back(cr[k], ci[k]);
  }
  auto map = [&](auto fn) {
    std::vector<std::complex<double>> out;
    for (int k = 0; k < 3; ++k) {
      out.push_back(fn(zc[k], cc[k]));
    }
    return out;
  };
  using C = std::complex<double>;
  // Holomorphic ops: c = g f'(z), no conjugation.
  expect_complex(vjp([](const array& a) { return exp(a); }, z, ct).second,
                 map([](C a, C g) { return g * std::exp(a); }));
  expect_complex(vjp([](const array& a) { return multiply(a, sin(a)); }, z, ct).second,
                 map([](C a, C g) { return g * (std::sin(a) + a * std::cos(a)); }));
  expect_complex(jvp([](const array& a) { return square(a); }, z, ct).second,
                 map([](C a, C g) { return g * 2.0 * a; }));
  // Linear maps and their transposes.
  expect_complex(vjp([](const array& a) { return conjugate(a); }, z, ct).second,
                 map([](C, C g) { return std::conj(g); }));
  expect_complex(jvp([](const array& a) { return conjugate(a); }, z, ct).second,
                 map([](C, C g) { return std::conj(g); }));
  expect_complex(vjp([](const array& a) { return real(a); }, z, ct_real).second,
                 map([](C, C g) { return C(g.real(), 0); }));
  expect_complex(vjp([](const array& a) { return imag(a); }, z, ct_real).second,
                 map([](C, C g) { return C(0, -g.real()); }));
  expect_close(jvp([](const array& a) { return real(a); }, z, ct).second, cr);
  expect_close(jvp([](const array& a) { return imag(a); }, z, ct).second, ci);
  // abs: jvp Re(conj(z) t) / |z|, vjp g conj(z) / |z|.
  expect_close(
      jvp([](const array& a) { return abs(a); }, z, ct).second,
      {(0.5 * 1.0 + 1.0 * 0.5) / std::abs(zc[0]), (-1.0 * -2.0 + 0.25 * 1.0) / std::abs(zc[1]),
       (2.0 * 0.5 + -0.5 * -1.5) / std::abs(zc[2])});
  expect_complex(vjp([](const array& a) { return abs(a); }, z, ct_real).second,
                 map([](C a, C g) { return g.real() * std::conj(a) / std::abs(a); }));
  // vmap keeps both parts.
  array zz = reshape(concatenate({z, multiply(z, z)}), {2, 3});
  auto vz = vmap([](const array& a) { return conjugate(multiply(a, abs(a))); }, 1, 1)(zz);
  auto ez = conjugate(multiply(zz, abs(zz)));
  expect_close(real(vz), to_vector(real(ez)), {2, 3});
  expect_close(imag(vz), to_vector(imag(ez)), {2, 3});
}

}  // namespace
}  // namespace mlx::core::test
