// Transforms composed with each other: higher derivatives, vmap of grad, compile of grad,
// checkpointing.
#include <gtest/gtest.h>

#include "mlx/mlx.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

array smooth_loss(const array& x, const array& y) {
  return sum(add(tanh(multiply(x, y)), exp(multiply(x, array(0.5, x.dtype())))));
}

ArrayFn as_array_fn(const std::function<std::vector<array>(const std::vector<array>&)>& f) {
  return f;
}

TEST(HigherOrder, SecondDerivativeOfTanh) {
  // d2/dx2 tanh(x) = -2 tanh(x) (1 - tanh(x)^2)
  array x = array({-1.5, -0.3, 0.0, 0.7, 2.0}, float64);
  auto d1 = grad([](const array& a) { return sum(tanh(a)); });
  auto d2 = grad([&d1](const array& a) { return sum(d1(a)); });
  std::vector<double> expected;
  for (double v : to_vector(x)) {
    double t = std::tanh(v);
    expected.push_back(-2 * t * (1 - t * t));
  }
  expect_close(d2(x), expected, {5}, 1e-12, 1e-12);
  // The gradient's own derivatives, against finite differences.
  check_grad(grad([](const array& a) { return sum(tanh(a)); }), x);
}

TEST(HigherOrder, ForwardOverReverseHessianVectorProduct) {
  array x = random_array({6}, float64, -1, 1, 1);
  array y = random_array({6}, float64, -1, 1, 2);
  auto g = [&y](const std::vector<array>& in) {
    return grad([&y](const std::vector<array>& a) { return smooth_loss(a[0], y); })(in);
  };
  // jvp(grad f) is checked against finite differences of grad f.
  check_grad(as_array_fn(g), {x}, {.check_vjp = false});
  check_grad(as_array_fn(g), {x}, {.check_jvp = false});
}

TEST(HigherOrder, VmapOfGradIsPerExampleGradients) {
  array xs = random_array({4, 3}, float64, -1, 1, 3);
  array y = random_array({3}, float64, -1, 1, 4);
  auto g = [&y](const array& x) {
    return grad([&y](const array& a) { return smooth_loss(a, y); })(x);
  };
  check_vmap(g, xs, 0, 0);
  check_vmap(g, transpose(xs), 1, 1);
}

TEST(HigherOrder, GradOfVmap) {
  array xs = random_array({4, 3}, float64, -1, 1, 5);
  array y = random_array({3}, float64, -1, 1, 6);
  auto per_row = vmap([&y](const array& x) { return smooth_loss(x, y); });
  auto total = grad([&](const array& x) { return sum(per_row(x)); })(xs);
  std::vector<double> expected;
  for (int i = 0; i < 4; ++i) {
    auto row = grad([&y](const array& a) { return smooth_loss(a, y); })(take(xs, i, 0));
    auto v = to_vector(row);
    expected.insert(expected.end(), v.begin(), v.end());
  }
  expect_close(total, expected, {4, 3}, 1e-12, 1e-12);
}

TEST(HigherOrder, CompileOfGradAndGradOfCompile) {
  array x = random_array({5}, float64, -1, 1, 7);
  array y = random_array({5}, float64, -1, 1, 8);
  auto loss = [](const std::vector<array>& in) { return smooth_loss(in[0], in[1]); };
  auto expected = grad(loss, std::vector<int>{0, 1})({x, y});

  auto compiled_grad = compile(grad(loss, std::vector<int>{0, 1}));
  auto g1 = compiled_grad({x, y});
  auto g1_again = compiled_grad({y, x});  // same signature: replayed
  auto loss_fn = [&loss](const std::vector<array>& in) { return std::vector<array>{loss(in)}; };
  auto compiled_loss = compile(loss_fn);
  auto g2 = grad([&](const std::vector<array>& in) { return compiled_loss(in)[0]; },
                 std::vector<int>{0, 1})({x, y});
  for (int k = 0; k < 2; ++k) {
    expect_close(g1[k], to_vector(expected[k]), {5}, 1e-12, 1e-12);
    expect_close(g2[k], to_vector(expected[k]), {5}, 1e-12, 1e-12);
  }
  auto swapped = grad(loss, std::vector<int>{0, 1})({y, x});
  expect_close(g1_again[0], to_vector(swapped[0]), {5}, 1e-12, 1e-12);
}

TEST(HigherOrder, VmapOfCompileAndCompileOfVmap) {
  array xs = random_array({3, 4}, float64, -1, 1, 9);
  array y = random_array({4}, float64, -1, 1, 10);
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{smooth_loss(in[0], in[1])};
  };
  check_vmap(compile(f), {xs, y}, {0, -1});
  auto compiled_vmap = compile(vmap(f, {1, -1}));
  auto got = compiled_vmap({transpose(xs), y})[0];
  auto expected = vmap(f, {0, -1})({xs, y})[0];
  expect_close(got, to_vector(expected), {3}, 1e-12, 1e-12);
}

TEST(HigherOrder, CustomFunctionRulesCompose) {
  // f(x) = x^3 with a custom vjp and jvp (3 x^2), differentiated twice and vmapped.
  auto cube = custom_function(
      [](const std::vector<array>& in) {
        return std::vector<array>{multiply(in[0], multiply(in[0], in[0]))};
      },
      [](const std::vector<array>& primals, const std::vector<array>& cts,
         const std::vector<array>&) {
        return std::vector<array>{
            multiply(cts[0], multiply(array(3.0, float64), square(primals[0])))};
      },
      [](const std::vector<array>& primals, const std::vector<array>& tangents,
         const std::vector<int>&) {
        return std::vector<array>{
            multiply(tangents[0], multiply(array(3.0, float64), square(primals[0])))};
      });
  array x = array({-1.0, 0.5, 2.0}, float64);
  auto f = [&cube](const array& a) { return sum(cube({a})[0]); };
  expect_close(grad(f)(x), {3.0, 0.75, 12.0}, {3}, 1e-12, 1e-12);
  auto df = grad(f);
  expect_close(grad([&df](const array& a) { return sum(df(a)); })(x), {-6.0, 3.0, 12.0}, {3}, 1e-12,
               1e-12);
  auto [out, tangent] = jvp([&cube](const array& a) { return cube({a})[0]; }, x, ones_like(x));
  expect_close(tangent, {3.0, 0.75, 12.0}, {3}, 1e-12, 1e-12);
  check_vmap([&cube](const array& a) { return cube({a})[0]; }, reshape(x, {3, 1}));
}

// Mean softmax cross-entropy of a two-layer MLP; params {w1, b1, w2, b2}, data {x, labels}.
array mlp_loss(const std::vector<array>& p, const array& x, const array& labels) {
  array h = tanh(add(matmul(x, p[0]), p[1]));
  array logits = add(matmul(h, p[2]), p[3]);
  array picked = take_along_axis(logits, expand_dims(labels, -1), -1);
  return mean(subtract(logsumexp(logits, -1, true), picked));
}

TEST(HigherOrder, SecondDerivativesOfSoftmaxCrossEntropy) {
  array logits = random_array({3, 4}, float64, -2, 2, 12);
  array labels = array({0, 3, 1});
  auto xent = [&labels](const array& z) {
    array picked = take_along_axis(z, expand_dims(labels, -1), -1);
    return mean(subtract(logsumexp(z, -1, true), picked));
  };
  // The gradient is (softmax(z) - onehot) / n; its derivatives against finite differences.
  check_grad(grad(xent), logits);
  array via_softmax = multiply(subtract(softmax(logits, -1), array({1.0, 0.0, 0.0, 0.0,  //
                                                                    0.0, 0.0, 0.0, 1.0,  //
                                                                    0.0, 1.0, 0.0, 0.0},
                                                                   {3, 4}, float64)),
                               array(1.0 / 3, float64));
  expect_close(grad(xent)(logits), to_vector(via_softmax), {3, 4}, 1e-12, 1e-12);
}

TEST(HigherOrder, SecondDerivativesOfASmallMLP) {
  std::vector<array> params = {
      random_array({4, 5}, float64, -1, 1, 13), random_array({5}, float64, -1, 1, 14),
      random_array({5, 3}, float64, -1, 1, 15), random_array({3}, float64, -1, 1, 16)};
  array x = random_array({6, 4}, float64, -1, 1, 17);
  array labels = array({0, 2, 1, 1, 0, 2});
  auto loss = [&](const std::vector<array>& p) { return mlp_loss(p, x, labels); };
  check_grad([&](const std::vector<array>& p) { return std::vector<array>{loss(p)}; }, params);
  // Derivatives of the gradient (Hessian-vector products both ways).
  check_grad(grad(loss, std::vector<int>{0, 1, 2, 3}), params);
}

// A segment of a deep chain whose backward pass needs its intermediates.
std::vector<array> segment(const std::vector<array>& in) {
  array y = sin(in[0]);
  array z = exp(y);
  return {multiply(y, z)};
}

// Peak memory while evaluating the gradient of a chain of `depth` segments.
size_t gradient_peak(int depth, bool checkpointed, array& gradient) {
  ArrayFn seg = checkpointed ? checkpoint(segment) : ArrayFn(segment);
  auto loss = [&](const array& x) {
    array h = x;
    for (int i = 0; i < depth; ++i) {
      h = seg({h})[0];
    }
    return sum(h);
  };
  array x = random_array({1 << 18}, float32, -1, 1, 11);  // 1 MiB
  eval(x);
  clear_cache();
  reset_peak_memory();
  size_t base = get_active_memory();
  gradient = grad(loss)(x);
  eval(gradient);
  return get_peak_memory() - base;
}

TEST(HigherOrder, CheckpointLowersThePeakMemoryOfAGradient) {
  const int depth = 24;
  array plain = zeros({1});
  array checkpointed = zeros({1});
  size_t plain_peak = gradient_peak(depth, false, plain);
  size_t checkpoint_peak = gradient_peak(depth, true, checkpointed);
  expect_close(checkpointed, to_vector(plain), plain.shape(), 1e-5, 1e-6);
  std::printf(
      "gradient of a %d-segment chain of 1 MiB arrays: peak %.1f MiB plain, "
      "%.1f MiB with checkpoint\n",
      depth, plain_peak / 1048576.0, checkpoint_peak / 1048576.0);
  // Plain keeps ~3 arrays per segment for the backward pass; checkpointing keeps one per
  // segment plus one segment's recomputation.
  EXPECT_LT(checkpoint_peak, plain_peak * 6 / 10);
  EXPECT_GT(plain_peak, static_cast<size_t>(depth) * 2 << 20);
}

}  // namespace
}  // namespace mlx::core::test
