// Transform rules of the matrix products (Matmul, AddMM, MatmulColumnSums), checked through
// matmul / addmm and their relatives against finite differences and loops.
#include <gtest/gtest.h>

#include <complex>
#include <functional>
#include <set>

#include "mlx/mlx.h"
#include "mlx/primitives/linalg.h"
#include "mlx/primitives/reduction.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

array rand64(const Shape& shape, uint32_t seed) {
  return random_array(shape, float64, -1, 1, seed);
}

std::vector<array> one(array a) { return {std::move(a)}; }

auto matmul_fn = [](const std::vector<array>& in) { return one(matmul(in[0], in[1])); };

struct Operands {
  Shape a, b;
};

const std::vector<Operands> kMatmulShapes = {
    {{3, 4}, {4, 2}},           // (M,K) @ (K,N)
    {{2, 3, 4}, {2, 4, 2}},     // batched
    {{2, 1, 2, 3}, {3, 3, 2}},  // broadcast batch: (2,1,M,K) @ (3,K,N)
    {{3, 2, 4}, {4, 3}},        // batched @ matrix
    {{4}, {4, 3}},              // vector @ matrix
    {{3, 4}, {4}},              // matrix @ vector
    {{4}, {4}},                 // vector @ vector
    {{2, 4}, {3, 4, 1}},        // broadcast over b's batch
    {{1, 1}, {1, 1}},           // size-1 everything
};

TEST(LinalgRules, MatmulGrad) {
  uint32_t seed = 1;
  for (size_t i = 0; i < kMatmulShapes.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "shape case " << i);
    const auto& c = kMatmulShapes[i];
    check_grad(matmul_fn, {rand64(c.a, seed), rand64(c.b, seed + 1)});
    seed += 2;
  }
}

TEST(LinalgRules, MatmulGradOneOperand) {
  array a = rand64({3, 4}, 10);
  array b = rand64({4, 2}, 11);
  check_grad(matmul_fn, {a, b}, {.argnums = {0}});
  check_grad(matmul_fn, {a, b}, {.argnums = {1}});
}

TEST(LinalgRules, MatmulGradTransposedOperands) {
  // a^T @ b^T and a batched, swapped view, read through their strides.
  auto f = [](const std::vector<array>& in) {
    return one(matmul(transpose(in[0]), transpose(in[1])));
  };
  check_grad(f, {rand64({4, 3}, 12), rand64({2, 4}, 13)});
  auto g = [](const std::vector<array>& in) { return one(matmul(swapaxes(in[0], 0, 2), in[1])); };
  check_grad(g, {rand64({4, 3, 2}, 14), rand64({2, 4, 3}, 15)});
}

TEST(LinalgRules, MatmulGradValues) {
  // d(a @ b) with cotangent G: G @ b^T and a^T @ G.
  array a = array({1.0, 2.0, 3.0, 4.0}, {2, 2}, float64);
  array b = array({5.0, 6.0, 7.0, 8.0}, {2, 2}, float64);
  array g = array({1.0, 0.0, 0.0, 1.0}, {2, 2}, float64);
  auto [out, cts] = vjp(matmul_fn, {a, b}, {g});
  expect_close(out[0], {19, 22, 43, 50}, {2, 2});
  expect_close(cts[0], {5, 7, 6, 8}, {2, 2});
  expect_close(cts[1], {1, 3, 2, 4}, {2, 2});
}

TEST(LinalgRules, ComplexFollowsBilinearConvention) {
  // Cotangents G @ b^T and a^T @ G without conjugation (the elementwise rules' convention).
  array i(std::complex<float>(0.0f, 1.0f));
  array a = add(array({1.0f, 2.0f}, {1, 2}, complex64),
                multiply(array({0.5f, -1.0f}, {1, 2}, complex64), i));
  array b = add(array({3.0f, -1.0f}, {2, 1}, complex64),
                multiply(array({1.0f, 2.0f}, {2, 1}, complex64), i));
  array g = add(array({1.0f}, {1, 1}, complex64), multiply(array({1.0f}, {1, 1}, complex64), i));
  auto cts = vjp(matmul_fn, {a, b}, {g}).second;
  // g * b^T = (1+i) * [3+i, -1+2i] = [2+4i, -3+i]; a^T * g = [(1+0.5i)(1+i), (2-i)(1+i)].
  expect_close(real(cts[0]), {2, -3}, {1, 2});
  expect_close(imag(cts[0]), {4, 1}, {1, 2});
  expect_close(real(cts[1]), {0.5, 3}, {2, 1});
  expect_close(imag(cts[1]), {1.5, 1}, {2, 1});
}

TEST(LinalgRules, MatmulRelativesGrad) {
  array a = rand64({2, 3}, 16);
  array b = rand64({3, 2}, 17);
  check_grad([](const std::vector<array>& in) { return one(tensordot(in[0], in[1], 1)); }, {a, b});
  check_grad([](const std::vector<array>& in) { return one(inner(in[0], transpose(in[1]))); },
             {a, b});
  check_grad([](const std::vector<array>& in) { return one(outer(in[0], in[1])); },
             {rand64({3}, 18), rand64({2}, 19)});
}

TEST(LinalgRules, Float32Grad) {
  check_grad(matmul_fn, {random_array({3, 4}, float32, -1, 1, 20),
                         random_array({2, 4, 2}, float32, -1, 1, 21)});
}

auto addmm_fn(float alpha, float beta) {
  return [alpha, beta](const std::vector<array>& in) {
    return one(addmm(in[0], in[1], in[2], alpha, beta));
  };
}

TEST(LinalgRules, AddmmGrad) {
  // c of the product's shape, and broadcast c (a row, a scalar).
  for (auto [alpha, beta] : {std::pair{1.f, 1.f}, {2.f, 0.5f}, {-0.5f, 0.f}, {0.f, 1.5f}}) {
    SCOPED_TRACE(::testing::Message() << "alpha " << alpha << " beta " << beta);
    auto f = addmm_fn(alpha, beta);
    check_grad(f, {rand64({3, 2}, 30), rand64({3, 4}, 31), rand64({4, 2}, 32)});
    check_grad(f, {rand64({2}, 33), rand64({2, 3, 4}, 34), rand64({4, 2}, 35)});
    check_grad(f, {rand64({}, 36), rand64({4}, 37), rand64({4, 2}, 38)});
    check_grad(f, {rand64({2, 3, 1}, 39), rand64({2, 3, 4}, 40), rand64({2, 4, 2}, 41)});
  }
}

TEST(LinalgRules, AddmmGradSubsets) {
  auto f = addmm_fn(1.5f, -2.f);
  std::vector<array> in = {rand64({3, 2}, 42), rand64({3, 4}, 43), rand64({4, 2}, 44)};
  for (std::vector<int> argnums : {std::vector<int>{0}, {1}, {2}, {0, 2}, {1, 2}}) {
    check_grad(f, in, {.argnums = argnums});
  }
}

TEST(LinalgRules, AddmmGradValues) {
  array c = array({1.0, 1.0}, {1, 2}, float64);
  array a = array({1.0, 2.0}, {1, 2}, float64);
  array b = array({1.0, 0.0, 0.0, 1.0}, {2, 2}, float64);
  auto [out, cts] = vjp(addmm_fn(2.f, 3.f), {c, a, b}, {array({1.0, 2.0}, {1, 2}, float64)});
  expect_close(out[0], {5, 7}, {1, 2});
  expect_close(cts[0], {3, 6}, {1, 2});
  expect_close(cts[1], {2, 4}, {1, 2});
  expect_close(cts[2], {2, 4, 4, 8}, {2, 2});
}

TEST(LinalgRules, MatmulVmap) {
  array a = rand64({2, 3, 4}, 50);
  array b = rand64({4, 2, 3}, 51);
  // a mapped on 0, 1, 2 (each leaves a (3,4)-like matrix) against an unmapped b.
  check_vmap(matmul_fn, {rand64({5, 3, 4}, 52), rand64({4, 2}, 53)}, {0, -1});
  check_vmap(matmul_fn, {rand64({3, 5, 4}, 54), rand64({4, 2}, 55)}, {1, -1}, {1});
  check_vmap(matmul_fn, {rand64({3, 4, 5}, 56), rand64({4, 2}, 57)}, {2, -1}, {2});
  // b mapped, a unmapped; both mapped on different axes.
  check_vmap(matmul_fn, {rand64({3, 4}, 58), rand64({4, 5, 2}, 59)}, {-1, 1});
  check_vmap(matmul_fn, {a, b}, {0, 1}, {1});
  // Batched operands, vectors.
  check_vmap(matmul_fn, {rand64({2, 2, 3, 4}, 60), rand64({2, 4, 2}, 61)}, {1, 0});
  check_vmap(matmul_fn, {rand64({3, 4}, 62), rand64({4}, 63)}, {0, -1});
  check_vmap(matmul_fn, {rand64({4}, 64), rand64({2, 4, 3}, 65)}, {-1, 0}, {1});
}

TEST(LinalgRules, MatmulVmapIsOneProduct) {
  // The mapped graph holds a single Matmul (no per-slice loop).
  auto out = vmap(matmul_fn, {2, -1})({rand64({3, 4, 6}, 66), rand64({4, 2}, 67)})[0];
  int count = 0;
  std::function<void(const array&)> visit = [&](const array& x) {
    if (!x.has_primitive())
      return;
    count += dynamic_cast<Matmul*>(&x.primitive()) != nullptr;
    for (auto& in : x.inputs())
      visit(in);
  };
  visit(out);
  EXPECT_EQ(count, 1);
}

TEST(LinalgRules, AddmmVmap) {
  auto f = addmm_fn(0.5f, 2.f);
  array c = rand64({3, 2}, 70), a = rand64({3, 4}, 71), b = rand64({4, 2}, 72);
  array cb = rand64({5, 3, 2}, 73), ab = rand64({3, 5, 4}, 74), bb = rand64({4, 2, 5}, 75);
  check_vmap(f, {cb, a, b}, {0, -1, -1});
  check_vmap(f, {c, ab, b}, {-1, 1, -1}, {2});
  check_vmap(f, {c, a, bb}, {-1, -1, 2});
  check_vmap(f, {cb, ab, bb}, {0, 1, 2}, {1});
  // c broadcast inside f (a row), mapped.
  check_vmap(f, {rand64({5, 2}, 76), ab, b}, {0, 1, -1});
}

TEST(LinalgRules, VmapOfGrad) {
  // Per-example gradients of a least-squares loss: grad's graph goes through the matmul rules.
  auto loss = [](const std::vector<array>& in) {
    return sum(square(subtract(matmul(in[0], in[1]), in[2])));
  };
  auto g = [loss](const std::vector<array>& in) { return grad(loss, {0, 1})(in); };
  check_vmap(g, {rand64({3, 2, 4}, 80), rand64({4, 2}, 81), rand64({3, 2, 2}, 82)}, {0, -1, 0});
}

TEST(LinalgRules, SecondDerivative) {
  // Derivatives of the vjp of a @ b: the rules applied to the rules' own graphs.
  array w = rand64({3, 2}, 90);
  auto first = [w](const std::vector<array>& in) {
    auto f = [](const std::vector<array>& x) { return one(matmul(x[0], x[1])); };
    return vjp(f, {in[0], in[1]}, {w}).second;
  };
  check_grad(first, {rand64({3, 4}, 91), rand64({4, 2}, 92)});
  auto first_addmm = [w](const std::vector<array>& in) {
    return vjp(addmm_fn(1.5f, 0.5f), {in[0], in[1], in[2]}, {w}).second;
  };
  check_grad(first_addmm, {rand64({3, 2}, 93), rand64({3, 4}, 94), rand64({4, 2}, 95)});
}

// How many steps of the graph below `outputs` run primitive P (a step may have several outputs).
template <typename P>
int count_primitives(const std::vector<array>& outputs) {
  std::set<const Primitive*> seen;
  int count = 0;
  std::function<void(const array&)> visit = [&](const array& x) {
    if (!x.has_primitive() || !seen.insert(&x.primitive()).second)
      return;
    count += dynamic_cast<P*>(&x.primitive()) != nullptr;
    for (auto& in : x.inputs())
      visit(in);
  };
  for (auto& x : outputs)
    visit(x);
  return count;
}

TEST(LinalgRules, LinearGradientsShareOnePass) {
  // A bias row's gradient and the weight's come from one MatmulColumnSums over the cotangent,
  // with no separate reduction; either one alone, or alpha or beta != 1, keeps the plain rules.
  array c = rand64({2}, 100), a = rand64({2, 3, 4}, 101), b = rand64({4, 2}, 102);
  array w = rand64({2, 3, 2}, 103);
  auto grads = [&](float alpha, float beta) {
    return vjp(addmm_fn(alpha, beta), {c, a, b}, {w}).second;
  };
  // c a constant: only the operands' gradients are wanted.
  auto operand_grads = [&](const std::vector<array>& in) { return one(addmm(c, in[0], in[1])); };
  auto fused = grads(1.f, 1.f);
  EXPECT_EQ(count_primitives<MatmulColumnSums>(fused), 1);
  EXPECT_EQ(count_primitives<Reduce>(fused), 0);
  EXPECT_EQ(fused[0].shape(), Shape({2}));
  // Against the composition through matmul and a broadcast add (float64).
  auto reference = [&](const std::vector<array>& in) {
    return one(add(matmul(in[1], in[2]), in[0]));
  };
  auto expected = vjp(reference, {c, a, b}, {w}).second;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(allclose(fused[i], expected[i], 1e-12, 1e-12).item<bool>()) << "input " << i;
  }
  EXPECT_EQ(count_primitives<MatmulColumnSums>(grads(2.f, 1.f)), 0);
  EXPECT_EQ(count_primitives<MatmulColumnSums>(grads(1.f, 0.5f)), 0);
  EXPECT_EQ(count_primitives<MatmulColumnSums>(vjp(operand_grads, {a, b}, {w}).second), 0);
}

TEST(LinalgRules, LinearGradientsThroughTransforms) {
  // MatmulColumnSums' own rules: derivatives of the fused gradients (vjp and jvp against
  // finite differences), their vmap, and float32.
  array w = rand64({5, 2}, 110);
  auto first = [w](const std::vector<array>& in) {
    return vjp(addmm_fn(1.f, 1.f), {in[0], in[1], in[2]}, {w}).second;
  };
  check_grad(first, {rand64({2}, 111), rand64({5, 4}, 112), rand64({4, 2}, 113)});
  check_grad(first, {rand64({1, 2}, 114), rand64({5, 4}, 115), rand64({4, 2}, 116)});
  check_vmap(first, {rand64({3, 2}, 117), rand64({5, 4}, 118), rand64({4, 2}, 119)}, {0, -1, -1});
  check_vmap(first, {rand64({2}, 120), rand64({3, 5, 4}, 121), rand64({4, 2}, 122)}, {-1, 0, -1});
  check_vmap(first, {rand64({2}, 123), rand64({5, 4}, 124), rand64({4, 2, 3}, 125)}, {-1, -1, 2});
  auto f32 = [](const Shape& s, uint32_t seed) { return random_array(s, float32, -1, 1, seed); };
  check_grad(addmm_fn(1.f, 1.f), {f32({3}, 126), f32({6, 5}, 127), f32({5, 3}, 128)});
}

TEST(LinalgRules, AddmmKeepsABiasRow) {
  // A bias row reaches the primitive as (1, N), not spread to the product's shape, and every
  // other addend (a column, a full matrix, a scalar against N > 1) is spread as before.
  array a = rand64({3, 4}, 130), b = rand64({4, 2}, 131);
  auto addend = [&](const array& c) { return addmm(c, a, b).inputs()[0].shape(); };
  EXPECT_EQ(addend(rand64({2}, 132)), Shape({1, 2}));
  EXPECT_EQ(addend(rand64({1, 2}, 133)), Shape({1, 2}));
  EXPECT_EQ(addend(rand64({3, 1}, 134)), Shape({3, 2}));
  EXPECT_EQ(addend(rand64({}, 135)), Shape({3, 2}));
  array out = addmm(rand64({2}, 136), rand64({2, 3, 4}, 137), b);
  EXPECT_EQ(out.shape(), Shape({2, 3, 2}));
  expect_close(addmm(array({1.0, 2.0}, {2}, float64), array({1.0, 1.0}, {1, 2}, float64),
                     array({1.0, 0.0, 0.0, 1.0}, {2, 2}, float64)),
               {2, 3}, {1, 2});
}

}  // namespace
}  // namespace mlx::core::test
