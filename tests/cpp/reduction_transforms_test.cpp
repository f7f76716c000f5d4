// Transform rules of the reduction primitives (Reduce, ArgReduce, Scan, Softmax, LogSumExp),
// checked through the public ops against finite differences and loops.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>

#include "mlx/mlx.h"
#include "mlx/primitives/reduction.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

using Unary = std::function<array(const array&)>;

array rand64(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  return random_array(shape, float64, lo, hi, seed);
}

// Shapes and axis choices shared by the reduction tests: (shape, axes, keepdims).
struct AxesCase {
  Shape shape;
  std::vector<int> axes;
  bool keepdims;
};

const std::vector<AxesCase> kAxesCases = {
    {{2, 3, 4}, {1}, false}, {{2, 3, 4}, {0, 2}, true}, {{2, 3, 4}, {0, 1, 2}, false},
    {{2, 3, 4}, {-1}, true}, {{3, 1, 4}, {1}, false},   {{3, 1, 4}, {0, 1}, false},
    {{5}, {0}, false},       {{2, 3}, {1, 0}, true},
};

using ReduceFn = std::function<array(const array&, const std::vector<int>&, bool)>;

int64_t reduced_size(const AxesCase& c) {
  int64_t n = 1;
  for (int ax : c.axes)
    n *= c.shape[ax < 0 ? ax + c.shape.size() : ax];
  return n;
}

// check_grad of `op` over kAxesCases, plain and on a transposed input. `spread`: skip
// reductions over a single element (var / std are not differentiable there).
void check_reduction_grads(const ReduceFn& op, double lo = -1, double hi = 1, bool spread = false) {
  uint32_t seed = 1;
  for (size_t i = 0; i < kAxesCases.size(); ++i) {
    const auto& c = kAxesCases[i];
    if (spread && reduced_size(c) == 1)
      continue;
    SCOPED_TRACE(::testing::Message() << "axes case " << i);
    check_grad([&](const array& x) { return op(x, c.axes, c.keepdims); },
               rand64(c.shape, seed++, lo, hi));
    // Non-contiguous: reduce a transposed view.
    Shape rev(c.shape.rbegin(), c.shape.rend());
    check_grad([&](const array& x) { return op(transpose(x), c.axes, c.keepdims); },
               rand64(rev, seed++, lo, hi));
  }
}

TEST(ReductionRules, SumGrad) {
  check_reduction_grads(
      [](const array& x, const std::vector<int>& ax, bool k) { return sum(x, ax, k); });
  check_grad([](const array& x) { return sum(x); }, rand64({}, 3));
  // A broadcast input: each element is summed three times.
  check_grad([](const array& x) { return sum(broadcast_to(x, {3, 4}), 1); }, rand64({4}, 4));
}

TEST(ReductionRules, SumGradValues) {
  // d sum(x, 1) / dx with cotangent c is c broadcast back.
  array x = rand64({2, 3}, 5);
  array c = array({1.0, 2.0}, {2}, float64);
  auto [out, ct] = vjp([](const array& a) { return sum(a, 1); }, x, c);
  expect_close(ct, {1, 1, 1, 2, 2, 2}, {2, 3});
}

TEST(ReductionRules, ProdGrad) {
  check_reduction_grads(
      [](const array& x, const std::vector<int>& ax, bool k) { return prod(x, ax, k); }, 0.5, 1.5);
}

TEST(ReductionRules, ProdGradWithZeros) {
  auto f = [](const array& x) { return prod(x, 1); };
  // Row 0: one zero; row 1: two zeros; row 2: none.
  array x = array({2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 0.0, 6.0, 1.5, 2.0, 3.0, 0.5}, {3, 4}, float64);
  check_grad(f, x);
  auto [out, g] = vjp(f, x, ones({3}, float64));
  // One zero: only the zero gets the product of the others; two zeros: nothing anywhere.
  expect_close(g, {0, 24, 0, 0, 0, 0, 0, 0, 3, 2.25, 1.5, 9}, {3, 4});
  // All axes, with a zero.
  check_grad([](const array& a) { return prod(a); },
             array({1.5, -2.0, 0.0, 0.5, 3.0, 1.25}, {2, 3}, float64));
}

TEST(ReductionRules, MaxMinGrad) {
  // Random values have no ties.
  check_reduction_grads(
      [](const array& x, const std::vector<int>& ax, bool k) { return max(x, ax, k); });
  check_reduction_grads(
      [](const array& x, const std::vector<int>& ax, bool k) { return min(x, ax, k); });
}

TEST(ReductionRules, MaxMinTiesSplitEvenly) {
  // Tied extremes share the cotangent evenly (as in MLX); jvp averages their tangents.
  array x = array({1.0, 3.0, 3.0, 2.0, -1.0, -1.0, -1.0, 0.0}, {2, 4}, float64);
  auto [out, g] = vjp([](const array& a) { return max(a, 1); }, x, array({6.0, 3.0}, {2}, float64));
  expect_close(g, {0, 3, 3, 0, 0, 0, 0, 3}, {2, 4});
  auto [out2, g2] =
      vjp([](const array& a) { return min(a, 1); }, x, array({6.0, 3.0}, {2}, float64));
  expect_close(g2, {6, 0, 0, 0, 1, 1, 1, 0}, {2, 4});
  array t = array({0.0, 1.0, 2.0, 5.0, 1.0, 2.0, 3.0, 4.0}, {2, 4}, float64);
  auto [out3, d] = jvp([](const array& a) { return min(a, 1); }, x, t);
  expect_close(d, {0, 2}, {2});
}

TEST(ReductionRules, MeanVarStdGrad) {
  check_reduction_grads(
      [](const array& x, const std::vector<int>& ax, bool k) { return mean(x, ax, k); });
  check_reduction_grads(
      [](const array& x, const std::vector<int>& ax, bool k) { return var(x, ax, k); }, -1, 1,
      true);
  check_reduction_grads(
      [](const array& x, const std::vector<int>& ax, bool k) { return std(x, ax, k, 1); }, -1, 1,
      true);
}

TEST(ReductionRules, LogSumExpGrad) {
  check_reduction_grads(
      [](const array& x, const std::vector<int>& ax, bool k) { return logsumexp(x, ax, k); }, -3,
      3);
  // Large values: the rule works from the output, not from exp(x).
  check_grad([](const array& x) { return logsumexp(x, 1); }, rand64({2, 3}, 9, 700, 710));
}

TEST(ReductionRules, SoftmaxGrad) {
  uint32_t seed = 20;
  for (size_t i = 0; i < kAxesCases.size(); ++i) {
    const auto& c = kAxesCases[i];
    SCOPED_TRACE(::testing::Message() << "axes case " << i);
    check_grad([&](const array& x) { return softmax(x, c.axes); }, rand64(c.shape, seed++, -2, 2));
    check_grad([&](const array& x) { return softmax(transpose(x), c.axes, true); },
               rand64(Shape(c.shape.rbegin(), c.shape.rend()), seed++, -2, 2));
  }
  check_grad([](const array& x) { return softmax(x, -1); },
             random_array({3, 4}, float32, -2, 2, 31));
}

TEST(ReductionRules, SoftmaxGradFloat16) {
  // 16-bit floats compute the rule in float32: the float16 result is the float32 one rounded.
  auto f = [](const array& x) { return softmax(x, -1, true); };
  array x = random_array({2, 5}, float16, -2, 2, 32);
  array c = random_array({2, 5}, float16, -1, 1, 33);
  auto g16 = vjp(f, x, c).second;
  auto g32 = vjp(f, astype(x, float32), astype(c, float32)).second;
  EXPECT_EQ(g16.dtype(), float16);
  expect_close(g16, to_vector(g32), {2, 5}, 1e-2, 1e-3);
  auto t16 = jvp(f, x, c).second;
  auto t32 = jvp(f, astype(x, float32), astype(c, float32)).second;
  EXPECT_EQ(t16.dtype(), float16);
  expect_close(t16, to_vector(t32), {2, 5}, 1e-2, 1e-3);
}

TEST(ReductionRules, SoftmaxVmapKeepsPrecise) {
  // The rule rebuilds the primitive with its precise flag.
  auto f = [](const array& x) { return softmax(x, -1, true); };
  array y = vmap(f, 0, 0)(random_array({2, 3}, float16, -1, 1, 33));
  bool found = false;
  std::function<void(const array&)> visit = [&](const array& a) {
    if (a.has_primitive()) {
      if (auto* p = dynamic_cast<Softmax*>(&a.primitive())) {
        found = true;
        EXPECT_TRUE(p->precise());
      }
      for (auto& in : a.inputs())
        visit(in);
    }
  };
  visit(y);
  EXPECT_TRUE(found);
}

// An exclusive scan's identity output (the first in scan order) without it: it is infinite
// for cummax / cummin / logcumsumexp, which finite differences cannot handle.
array drop_identity(const array& y, int axis, bool reverse, bool inclusive) {
  if (inclusive)
    return y;
  axis = axis < 0 ? axis + y.ndim() : axis;
  Shape start(y.ndim(), 0), stop = y.shape();
  (reverse ? stop[axis] : start[axis]) += reverse ? -1 : 1;
  return slice(y, start, stop);
}

// Cumulative ops with every reverse / inclusive combination on axes 0 and 1.
void check_scan_grads(const std::function<array(const array&, int, bool, bool)>& op,
                      const array& x) {
  for (int axis : {0, 1, -1}) {
    for (bool reverse : {false, true}) {
      for (bool inclusive : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << "axis " << axis << " reverse " << reverse << " inclusive " << inclusive);
        check_grad(
            [&](const array& a) {
              return drop_identity(op(a, axis, reverse, inclusive), axis, reverse, inclusive);
            },
            x);
      }
    }
  }
  // Non-contiguous input.
  check_grad([&](const array& a) { return op(transpose(a), 1, true, true); }, x);
}

TEST(ReductionRules, CumsumGrad) {
  check_scan_grads([](const array& x, int ax, bool r, bool i) { return cumsum(x, ax, r, i); },
                   rand64({3, 4}, 40));
  check_grad([](const array& x) { return cumsum(x, 1, false, false); }, rand64({2, 3, 2}, 41));
}

TEST(ReductionRules, CumsumGradValues) {
  // cumsum's vjp is the reverse cumsum of the cotangent.
  array x = rand64({4}, 42);
  array c = array({1.0, 2.0, 3.0, 4.0}, {4}, float64);
  expect_close(vjp([](const array& a) { return cumsum(a, 0); }, x, c).second, {10, 9, 7, 4});
  expect_close(vjp([](const array& a) { return cumsum(a, 0, true, false); }, x, c).second,
               {0, 1, 3, 6});
}

TEST(ReductionRules, CumprodGrad) {
  auto op = [](const array& x, int ax, bool r, bool i) { return cumprod(x, ax, r, i); };
  check_scan_grads(op, rand64({3, 4}, 43, 0.5, 1.5));
  // Zeros: one per row, two in a row, at either end (cumprod is multilinear, so central
  // differences are exact there).
  check_scan_grads(
      op, array({1.5, 0.0, 2.0, -1.0, 0.0, 1.2, 0.0, 0.8, 0.7, -1.1, 0.9, 0.0}, {3, 4}, float64));
  check_scan_grads(
      op, array({0.0, 2.0, 0.0, 1.5, 0.5, -2.0, 0.0, 0.0, 0.0, 1.25, 0.0, 3.0}, {3, 4}, float64));
}

TEST(ReductionRules, CumprodGradWithZeroValues) {
  // x = [2, 0, 3, 4]: y = [2, 0, 0, 0]; dy/dx with unit cotangents.
  array x = array({2.0, 0.0, 3.0, 4.0}, {4}, float64);
  auto g = vjp([](const array& a) { return cumprod(a, 0); }, x, ones({4}, float64)).second;
  // d/dx0 = 1 (only y0 is non-zero nearby); d/dx1 = 2 + 2*3 + 2*3*4 = 32; later: 0.
  expect_close(g, {1, 32, 0, 0});
}

TEST(ReductionRules, CummaxCumminGrad) {
  array x = rand64({3, 4}, 44);
  check_scan_grads([](const array& a, int ax, bool r, bool i) { return cummax(a, ax, r, i); }, x);
  check_scan_grads([](const array& a, int ax, bool r, bool i) { return cummin(a, ax, r, i); }, x);
}

TEST(ReductionRules, CummaxRoutesToRunningMaximum) {
  array x = array({1.0, 3.0, 2.0, 5.0, 4.0}, {5}, float64);
  array c = array({1.0, 2.0, 4.0, 8.0, 16.0}, {5}, float64);
  expect_close(vjp([](const array& a) { return cummax(a, 0); }, x, c).second, {1, 6, 0, 24, 0});
  // Exclusive: output i is the maximum before i; output 0 is the identity.
  expect_close(vjp([](const array& a) { return cummax(a, 0, false, false); }, x, c).second,
               {2, 12, 0, 16, 0});
  // Reverse: [5, 5, 5, 5, 4].
  expect_close(vjp([](const array& a) { return cummax(a, 0, true); }, x, c).second,
               {0, 0, 0, 15, 16});
  // Ties route to the latest equal element in scan order.
  array tied = array({2.0, 1.0, 2.0, 0.0}, {4}, float64);
  array c4 = array({1.0, 2.0, 4.0, 8.0}, {4}, float64);
  expect_close(vjp([](const array& a) { return cummax(a, 0); }, tied, c4).second, {3, 0, 12, 0});
}

TEST(ReductionRules, LogcumsumexpGrad) {
  check_scan_grads([](const array& a, int ax, bool r, bool i) { return logcumsumexp(a, ax, r, i); },
                   rand64({3, 4}, 45, -3, 3));
  // Large magnitudes: no overflow in the rules.
  check_grad([](const array& a) { return logcumsumexp(a, 0); }, rand64({5}, 46, 500, 510));
  check_grad(
      [](const array& a) { return drop_identity(logcumsumexp(a, 0, true, false), 0, true, false); },
      rand64({5}, 47, -510, -500));
}

TEST(ReductionRules, LogcumsumexpGradAtMinusInfinity) {
  // A masked (-inf) leading element gets a zero gradient, not NaN (its own term, where every
  // element so far is -inf, is taken as zero).
  double inf = std::numeric_limits<double>::infinity();
  array x = array({-inf, 0.5, -1.0}, {3}, float64);
  array c = array({1.0, -2.0, 0.5}, {3}, float64);
  auto g = vjp([](const array& a) { return logcumsumexp(a, 0); }, x, c).second;
  auto gv = to_vector(g);
  EXPECT_EQ(gv[0], 0.0);
  double y2 = std::log(std::exp(0.5) + std::exp(-1.0));
  EXPECT_NEAR(gv[1], -2.0 + 0.5 * std::exp(0.5 - y2), 1e-12);
  EXPECT_NEAR(gv[2], 0.5 * std::exp(-1.0 - y2), 1e-12);
  // Exclusive: y = [-inf, -inf, 0.5]; the identity output has a zero tangent.
  auto t = jvp([](const array& a) { return logcumsumexp(a, 0, false, false); }, x, c).second;
  auto tv = to_vector(t);
  EXPECT_EQ(tv[0], 0.0);
  EXPECT_FALSE(std::isnan(tv[1]));
  EXPECT_NEAR(tv[2], -2.0, 1e-12);
}

using C = std::complex<double>;

array complex_array(const std::vector<C>& v, const Shape& shape) {
  std::vector<double> re, im;
  for (auto z : v) {
    re.push_back(z.real());
    im.push_back(z.imag());
  }
  return add(from_vector(re, shape, complex64),
             multiply(from_vector(im, shape, complex64), array(std::complex<float>(0.0f, 1.0f))));
}

void expect_complex(const array& z, const std::vector<C>& expected) {
  ASSERT_EQ(z.dtype(), complex64);
  auto re = to_vector(real(z));
  auto im = to_vector(imag(z));
  ASSERT_EQ(re.size(), expected.size());
  for (size_t i = 0; i < re.size(); ++i) {
    EXPECT_NEAR(re[i], expected[i].real(), 1e-4) << "at " << i;
    EXPECT_NEAR(im[i], expected[i].imag(), 1e-4) << "at " << i;
  }
}

TEST(ReductionRules, ComplexFollowsBilinearConvention) {
  // Holomorphic rules: the cotangent times the derivative, without conjugation (as the
  // elementwise rules do).
  std::vector<C> zv = {{1, 2}, {0.5, -1}, {-1, 0.25}};
  array z = complex_array(zv, {3});
  C g(0.5, -2);
  auto gp = vjp([](const array& a) { return prod(a); }, z, complex_array({g}, {})).second;
  expect_complex(gp, {g * zv[1] * zv[2], g * zv[0] * zv[2], g * zv[0] * zv[1]});
  auto gs = vjp([](const array& a) { return sum(a); }, z, complex_array({g}, {})).second;
  expect_complex(gs, {g, g, g});
  std::vector<C> cv = {{1, 1}, {2, 0}, {0, -1}};
  auto gc = vjp([](const array& a) { return cumprod(a, 0); }, z, complex_array(cv, {3})).second;
  expect_complex(gc, {cv[0] + cv[1] * zv[1] + cv[2] * zv[1] * zv[2],
                      cv[1] * zv[0] + cv[2] * zv[0] * zv[2], cv[2] * zv[0] * zv[1]});
  auto tc = jvp([](const array& a) { return cumsum(a, 0); }, z, complex_array(cv, {3})).second;
  expect_complex(tc, {cv[0], cv[0] + cv[1], cv[0] + cv[1] + cv[2]});
}

TEST(ReductionRules, NonDifferentiableReductions) {
  array x = rand64({3, 4}, 50);
  std::vector<Unary> fns = {
      [](const array& a) { return astype(all(a, 1), float64); },
      [](const array& a) { return astype(any(a, 0), float64); },
      [](const array& a) { return astype(argmax(a, 1), float64); },
      [](const array& a) { return astype(argmin(a), float64); },
  };
  for (auto& f : fns) {
    auto g = vjp(f, x, ones_like(f(x))).second;
    expect_close(g, std::vector<double>(12, 0.0), {3, 4});
    auto t = jvp(f, x, ones_like(x)).second;
    expect_close(t, std::vector<double>(t.size(), 0.0), t.shape());
  }
}

TEST(ReductionRules, NonDifferentiableRulesGiveZeros) {
  // The rules themselves, called directly.
  array x = rand64({3, 4}, 51);
  for (array out : {argmax(x, 1, true), all(x, 0, true), any(x, std::vector<int>{0, 1}, true)}) {
    auto& p = out.primitive();
    auto ct = p.vjp({x}, {zeros_like(out)}, {0}, {out});
    ASSERT_EQ(ct.size(), 1u);
    EXPECT_EQ(ct[0].dtype(), float64);
    expect_close(ct[0], std::vector<double>(12, 0.0), {3, 4});
    auto t = p.jvp({x}, {ones_like(x)}, {0});
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].shape(), out.shape());
    EXPECT_EQ(t[0].dtype(), out.dtype());
    expect_close(t[0], std::vector<double>(out.size(), 0.0), out.shape());
  }
}

// check_vmap over in_axes 0 / 1 / 2 and a few out axes.
void check_vmap_axes(const Unary& f, const array& x) {
  for (int in_axis = 0; in_axis < x.ndim(); ++in_axis) {
    SCOPED_TRACE(::testing::Message() << "in_axis " << in_axis);
    auto wrapped = [&](const std::vector<array>& a) { return std::vector<array>{f(a[0])}; };
    check_vmap(wrapped, {x}, {in_axis}, {0});
    int out_ndim = f(take(x, 0, in_axis)).ndim() + 1;
    check_vmap(wrapped, {x}, {in_axis}, {out_ndim - 1});
  }
}

TEST(ReductionRules, ReduceVmap) {
  array x = rand64({2, 3, 4}, 60);
  std::vector<Unary> fns = {
      [](const array& a) { return sum(a, 1); },
      [](const array& a) { return sum(a); },
      [](const array& a) { return prod(a, 0, true); },
      [](const array& a) { return max(a, -1); },
      [](const array& a) {
        return min(a, std::vector<int>{0, 1});
      },
      [](const array& a) { return logsumexp(a, 0); },
      [](const array& a) { return logsumexp(a, -1, true); },
      [](const array& a) { return softmax(a, -1); },
      [](const array& a) { return softmax(a, 0, true); },
      [](const array& a) { return astype(all(a, 1), float64); },
      [](const array& a) { return astype(any(a), float64); },
      [](const array& a) { return astype(argmax(a, 0), float64); },
      [](const array& a) { return astype(argmin(a, -1, true), float64); },
  };
  for (size_t i = 0; i < fns.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "function " << i);
    check_vmap_axes(fns[i], x);
  }
}

TEST(ReductionRules, ComposedReductionVmap) {
  array x = rand64({2, 3, 4}, 65);
  check_vmap_axes([](const array& a) { return mean(a, 0); }, x);
  check_vmap_axes([](const array& a) { return var(a, std::vector<int>{0, 1}, true); }, x);
  check_vmap_axes([](const array& a) { return std(a); }, x);
}

TEST(ReductionRules, ReduceVmapWithUnmappedInput) {
  // The unmapped operand is broadcast against the mapped one before the reduction.
  auto f = [](const std::vector<array>& a) {
    return std::vector<array>{max(multiply(a[0], a[1]), 0), sum(a[1], 0, true)};
  };
  check_vmap(f, {rand64({2, 3, 4}, 61), rand64({4}, 62)}, {1, -1}, {0, 1});
  check_vmap(f, {rand64({3, 4}, 63), rand64({4, 2}, 64)}, {-1, 1}, {1, 0});
}

TEST(ReductionRules, ScanVmap) {
  array x = rand64({2, 3, 4}, 63, 0.5, 1.5);
  for (bool reverse : {false, true}) {
    for (bool inclusive : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "reverse " << reverse << " inclusive " << inclusive);
      check_vmap_axes([&](const array& a) { return cumsum(a, 1, reverse, inclusive); }, x);
      check_vmap_axes([&](const array& a) { return cumprod(a, -1, reverse, inclusive); }, x);
      check_vmap_axes([&](const array& a) { return cummax(a, 0, reverse, inclusive); }, x);
      check_vmap_axes([&](const array& a) { return cummin(a, 1, reverse, inclusive); }, x);
      check_vmap_axes([&](const array& a) { return logcumsumexp(a, 0, reverse, inclusive); }, x);
    }
  }
}

TEST(ReductionRules, VmapOfGrad) {
  // Per-example gradients go through the vmap rules of the vjp graphs.
  array x = rand64({3, 2, 4}, 64, 0.5, 1.5);
  std::vector<Unary> losses = {
      [](const array& a) { return sum(prod(a, 1)); },
      [](const array& a) { return sum(max(a, 0)); },
      [](const array& a) { return sum(logsumexp(a, 1)); },
      [](const array& a) { return sum(multiply(softmax(a, -1), a)); },
      [](const array& a) { return sum(cumprod(a, 1, true)); },
      [](const array& a) { return sum(cummax(a, 1)); },
      [](const array& a) { return sum(logcumsumexp(a, 1, false, false)); },
  };
  for (size_t i = 0; i < losses.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "loss " << i);
    check_vmap(grad(losses[i]), x, 0, 0);
    check_vmap(grad(losses[i]), x, 2, 1);
  }
}

// Softmax cross-entropy of logits x @ w against one-hot labels, averaged over the batch.
array cross_entropy(const array& logits, const array& labels) {
  array nll = subtract(logsumexp(logits, -1), sum(multiply(logits, labels), -1));
  return mean(nll);
}

TEST(ReductionRules, SecondDerivativeOfCrossEntropy) {
  array labels = array({0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0}, {3, 3}, float64);
  array x = rand64({3, 3}, 70, -2, 2);
  // d/dx of grad: check_grad compares the rules of the vjp graph against central
  // differences of the first derivative.
  auto first = [labels](const array& a) {
    return grad([labels](const array& l) { return cross_entropy(l, labels); })(a);
  };
  check_grad(first, x);
  // The same loss through softmax and log.
  auto via_softmax = [labels](const array& a) {
    return grad([labels](const array& l) {
      return negative(mean(sum(multiply(log(softmax(l, -1)), labels), -1)));
    })(a);
  };
  check_grad(via_softmax, x);
  // grad(grad(.)) of a scalar function of the first derivative.
  auto gg = grad([&](const array& a) { return sum(square(first(a))); });
  auto h = gg(x);
  auto fd = [&](size_t e) {
    double eps = 1e-6;
    auto v = to_vector(x);
    auto bump = [&](double d) {
      auto w = v;
      w[e] += d;
      return to_vector(sum(square(first(from_vector(w, x.shape(), float64)))))[0];
    };
    return (bump(eps) - bump(-eps)) / (2 * eps);
  };
  auto hv = to_vector(h);
  for (size_t e = 0; e < hv.size(); ++e) {
    EXPECT_NEAR(hv[e], fd(e), 1e-6) << "at " << e;
  }
}

}  // namespace
}  // namespace mlx::core::test
