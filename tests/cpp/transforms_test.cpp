// The transform drivers: vjp, jvp, grad, vmap, custom functions, checkpoint.
#include <gtest/gtest.h>

#include "mlx/mlx.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

TEST(Transforms, VjpOfIdentityPassesCotangent) {
  array x = random_array({2, 3});
  array c = random_array({2, 3}, float32, -1, 1, 3);
  auto [out, ct] = vjp([](const array& a) { return a; }, x, c);
  expect_close(out, to_vector(x), {2, 3});
  expect_close(ct, to_vector(c), {2, 3});
}

TEST(Transforms, VjpChecksCotangents) {
  array x = random_array({2, 3});
  auto id = [](const std::vector<array>& a) { return a; };
  EXPECT_THROW(vjp(id, {x}, {zeros({3, 2})}), std::invalid_argument);
  EXPECT_THROW(vjp(id, {x}, {}), std::invalid_argument);
}

TEST(Transforms, IntegerPrimalsHaveZeroCotangents) {
  array x = random_array({3});
  array i = array({1, 2, 3});
  auto f = [](const std::vector<array>& a) { return std::vector<array>{a[0]}; };
  auto [outs, cts] = vjp(f, {x, i}, {ones({3})});
  expect_close(cts[0], {1, 1, 1});
  EXPECT_EQ(cts[1].dtype(), int32);
  expect_close(cts[1], {0, 0, 0});
}

TEST(Transforms, GradRejectsBadArgnums) {
  auto f = [](const std::vector<array>& a) { return sum(a[0]); };
  array x = random_array({3});
  EXPECT_THROW(grad(f, 1)({x}), std::invalid_argument);
  EXPECT_THROW(grad(f, -1)({x}), std::invalid_argument);
  EXPECT_THROW(grad(f, std::vector<int>{0, 0})({x}), std::invalid_argument);
  EXPECT_THROW(grad(f, 0)({array({1, 2})}), std::invalid_argument);
  auto not_scalar = [](const std::vector<array>& a) { return a[0]; };
  EXPECT_THROW(grad(not_scalar, 0)({x}), std::invalid_argument);
}

TEST(Transforms, JvpChecksTangents) {
  auto id = [](const std::vector<array>& a) { return a; };
  EXPECT_THROW(jvp(id, {zeros({2})}, {zeros({3})}), std::invalid_argument);
  EXPECT_THROW(jvp(id, {zeros({2})}, {}), std::invalid_argument);
}

TEST(Transforms, VmapOfIdentityMovesAxes) {
  array x = random_array({2, 3, 4});
  auto id = [](const array& a) { return a; };
  auto y = vmap(id, 1, 0)(x);
  expect_close(y, to_vector(moveaxis(x, 1, 0)), {3, 2, 4});
  auto z = vmap(id, 0, 2)(x);
  expect_close(z, to_vector(moveaxis(x, 0, 2)), {3, 4, 2});
}

TEST(Transforms, VmapBroadcastsUnmappedOutputs) {
  array x = random_array({4, 3});
  array c = random_array({3}, float32, -1, 1, 5);
  auto f = [&c](const std::vector<array>& a) { return std::vector<array>{c}; };
  auto out = vmap(f, {0})({x})[0];
  ASSERT_EQ(out.shape(), (Shape{4, 3}));
  expect_close(take(out, 2, 0), to_vector(c), {3});
}

TEST(Transforms, VmapChecksAxes) {
  auto id = [](const std::vector<array>& a) { return a; };
  array x = zeros({2, 3});
  EXPECT_THROW(vmap(id, {2})({x}), std::invalid_argument);
  EXPECT_THROW(vmap(id, {-2})({x}), std::invalid_argument);
  EXPECT_THROW(vmap(id, {-1})({x}), std::invalid_argument);
  EXPECT_THROW(vmap(id, {0, 0})({x}), std::invalid_argument);
  EXPECT_THROW(vmap(id, {0, 1})({x, x}), std::invalid_argument);
  EXPECT_THROW(vmap(id, {0}, {3})({x}), std::invalid_argument);
}

TEST(Transforms, EvalInsideVmapIsAClearError) {
  auto f = [](const array& a) {
    eval(a);
    return a;
  };
  EXPECT_THROW(vmap(f)(zeros({2, 2})), std::invalid_argument);
}

// Forces vjp's forward overlap on every device for one test (the default is GPU streams).
struct OverlapEverywhere {
  OverlapEverywhere() { core::detail::set_vjp_overlap(core::detail::VjpOverlap::always); }
  ~OverlapEverywhere() { core::detail::set_vjp_overlap(core::detail::VjpOverlap::gpu); }
};

TEST(Transforms, OutermostVjpStartsTheForward) {
  OverlapEverywhere overlap;
  array x = random_array({64});
  auto f = [](const std::vector<array>& a) { return std::vector<array>{sum(exp(a[0]) * 2.0f)}; };
  auto [outs, cts] = vjp(f, {x}, {array(1.0f)});
  // The forward was handed to its stream while the backward graph was built; the gradient
  // waits for the caller's eval.
  EXPECT_NE(outs[0].status(), array::Status::unscheduled);
  EXPECT_EQ(cts[0].status(), array::Status::unscheduled);
  expect_close(cts[0], to_vector(exp(x) * 2.0f), {64});
  // Inside another transform the forward is left to the outer trace: vmap's inputs are
  // placeholders, and a second derivative walks the inner forward's graph.
  auto g = [](const array& a) { return grad([](const array& b) { return sum(exp(b)); })(a); };
  array batch = random_array({3, 4});
  expect_close(vmap(g)(batch), to_vector(exp(batch)), {3, 4});
  expect_close(grad([&](const array& a) { return sum(g(a)); })(batch), to_vector(exp(batch)),
               {3, 4});
}

TEST(Transforms, StopGradientBlocksCotangents) {
  array x = random_array({3});
  auto f = [](const std::vector<array>& a) { return std::vector<array>{stop_gradient(a[0])}; };
  auto [outs, cts] = vjp(f, {x}, {ones({3})});
  expect_close(outs[0], to_vector(x), {3});
  expect_close(cts[0], {0, 0, 0});
}

TEST(Transforms, CustomVjpReplacesTheRule) {
  auto f = custom_vjp(
      [](const std::vector<array>& a) { return a; },
      [](const std::vector<array>&, const std::vector<array>& cts, const std::vector<array>&) {
        return std::vector<array>{multiply(cts[0], array(3.0f))};
      });
  array x = random_array({3});
  auto [outs, cts] = vjp(f, {x}, {ones({3})});
  expect_close(outs[0], to_vector(x), {3});
  expect_close(cts[0], {3, 3, 3});
}

TEST(Transforms, CustomVmapReplacesTheRule) {
  // The custom rule marks its use by adding 100, so the test sees which path ran.
  int calls = 0;
  auto f = custom_function(
      [](const std::vector<array>& a) { return std::vector<array>{multiply(a[0], array(2.0f))}; },
      std::nullopt, std::nullopt,
      [&calls](const std::vector<array>& inputs, const std::vector<int>& axes) {
        ++calls;
        array out = add(multiply(inputs[0], array(2.0f)), array(100.0f));
        return std::make_pair(std::vector<array>{out}, std::vector<int>{axes[0]});
      });
  array x = random_array({3, 2});
  auto y = vmap(f, {1}, {0})({x})[0];
  EXPECT_EQ(calls, 1);
  std::vector<double> expected;
  for (double v : to_vector(transpose(x))) {
    expected.push_back(2 * v + 100);
  }
  expect_close(y, expected, {2, 3});
  // Without vmap the function itself runs.
  expect_close(f({x})[0], to_vector(multiply(x, array(2.0f))), {3, 2});
}

TEST(Transforms, DependsOrdersWithoutChangingValues) {
  array x = random_array({3});
  array y = random_array({2}, float32, -1, 1, 9);
  auto out = depends({x}, {y});
  ASSERT_EQ(out.size(), 1u);
  expect_close(out[0], to_vector(x), {3});
}

TEST(Transforms, LayoutRulesAgainstFiniteDifferences) {
  array x = random_array({2, 3}, float64);
  check_grad([](const array& a) { return broadcast_to(reshape(a, {2, 1, 3}), {4, 2, 5, 3}); }, x);
  check_grad([](const array& a) { return transpose(reshape(a, {3, 2}), {1, 0}); }, x);
  check_grad([](const array& a) { return astype(astype(a, float32), float64); }, x,
             {.eps = 1e-3, .rtol = 1e-3});
  check_vmap([](const array& a) { return broadcast_to(a, {4, 3}); }, x, 0, 1);
  check_vmap([](const array& a) { return transpose(reshape(a, {1, 2}), {1, 0}); }, x, 1, 0);
}

}  // namespace
}  // namespace mlx::core::test
