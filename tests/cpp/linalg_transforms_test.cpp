// Transform rules of the matrix products (Matmul, AddMM, MatmulColumnSums), checked through
// matmul / addmm and their relatives against finite differences and loops.
#include <gtest/gtest.h>

#include <complex>
#include <functional>
#include <set>

#include "mlx/mlx.h"
#include "mlx/primitives/linalg.h"
#include "mlx/primitives/reduction.h"
#include "mlx/primitives/shape.h"
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

// Mixed precision: float32 weights cast to float16 / bfloat16 for the product. AsType's vjp
// makes the product that computes their gradient store it in float32 (no AsType, no rounding).

constexpr Dtype kHalfDtypes[] = {bfloat16, float16};

array rand_as(const Shape& shape, Dtype dt, uint32_t seed) {
  array x = astype(random_array(shape, float32, -1, 1, seed), dt);
  eval(x);
  return x;
}

// Steps below `outputs` that cast a 16-bit value to float32.
int widening_casts(const std::vector<array>& outputs) {
  std::set<uintptr_t> seen;
  int count = 0;
  std::function<void(const array&)> visit = [&](const array& x) {
    if (!x.has_primitive() || !seen.insert(x.id()).second)
      return;
    const auto& in = x.inputs();
    count += dynamic_cast<AsType*>(&x.primitive()) && x.dtype() == float32 &&
             (in[0].dtype() == bfloat16 || in[0].dtype() == float16);
    for (auto& i : in)
      visit(i);
  };
  for (auto& x : outputs)
    visit(x);
  return count;
}

// The Matmul or MatmulColumnSums step under `x` through its views.
const array& product_under(const array& x) {
  const array* p = &x;
  while (dynamic_cast<Transpose*>(&p->primitive()) || dynamic_cast<Reshape*>(&p->primitive()))
    p = &p->inputs()[0];
  return *p;
}

// x (float64) close to `expected` computed in float64 from the same 16-bit values: tight enough
// that a gradient rounded to 16 bits (relative error up to 2^-9) fails.
void expect_float32_close(const array& x, const array& expected) {
  ASSERT_EQ(x.shape(), expected.shape());
  EXPECT_EQ(x.dtype(), float32);
  expect_close(x, to_vector(expected), expected.shape(), 1e-5, 1e-5);
}

array f64(const array& x) { return astype(x, float64); }

TEST(LinalgRules, MixedPrecisionWeightGradientIsAFloat32Product) {
  for (Dtype dt : kHalfDtypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    array x = rand_as({6, 5}, dt, 140), g = rand_as({6, 3}, dt, 141);
    array w = random_array({3, 5}, float32, -1, 1, 142);
    auto f = [&](const std::vector<array>& in) {
      return one(matmul(x, transpose(astype(in[0], dt))));
    };
    array dw = vjp(f, {w}, {g}).second[0];
    EXPECT_EQ(widening_casts({dw}), 0);
    EXPECT_EQ(count_primitives<Matmul>({dw}), 1);
    const array& p = product_under(dw);
    ASSERT_TRUE(dynamic_cast<Matmul*>(&p.primitive()));
    EXPECT_TRUE(static_cast<Matmul&>(p.primitive()).float32_out());
    EXPECT_EQ(p.inputs()[0].dtype(), dt);
    expect_float32_close(dw, transpose(matmul(transpose(f64(x)), f64(g))));
  }
}

TEST(LinalgRules, MixedPrecisionGradientLayouts) {
  // Batched operands, the cast weight on either side, transposed or not, 1-element and empty
  // products; every gradient float32 without a cast, against float64.
  using Product = std::function<array(const array&, const array&)>;  // (x, w cast to 16 bits)
  struct Case {
    Shape x, w;
    Product f;
    bool folds = true;  // an empty sum is zeros, not a product: cast
  };
  Product x_wt = [](auto& x, auto& w) { return matmul(x, swapaxes(w, -1, -2)); };
  Product x_w = [](auto& x, auto& w) { return matmul(x, w); };
  const std::vector<Case> cases = {
      {{2, 4, 5}, {3, 5}, x_wt},
      {{2, 4, 5}, {2, 3, 5}, x_wt},
      {{2, 5, 4}, {2, 3, 5}, [](auto& x, auto& w) { return matmul(w, x); }},
      {{4, 5}, {5, 3}, x_w},
      {{5, 4}, {5, 3}, [](auto& x, auto& w) { return matmul(transpose(w), x); }},
      {{1, 1}, {1, 1}, x_w},
      {{4, 5}, {0, 5}, x_wt},
      {{0, 5}, {3, 5}, x_wt, false},
  };
  uint32_t seed = 150;
  for (Dtype dt : kHalfDtypes) {
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << dt << " case " << i);
      const Case& c = cases[i];
      array x = rand_as(c.x, dt, seed++);
      array w = random_array(c.w, float32, -1, 1, seed++);
      array g = rand_as(c.f(x, astype(w, dt)).shape(), dt, seed++);
      auto f = [&](const std::vector<array>& in) { return one(c.f(x, astype(in[0], dt))); };
      array dw = vjp(f, {w}, {g}).second[0];
      EXPECT_EQ(widening_casts({dw}), c.folds ? 0 : 1);
      // float64 reference: the same rule on the same 16-bit values.
      auto ref = [&](const std::vector<array>& in) { return one(c.f(f64(x), in[0])); };
      expect_float32_close(dw, vjp(ref, {f64(astype(w, dt))}, {f64(g)}).second[0]);
    }
  }
}

TEST(LinalgRules, MixedPrecisionLinearWithBias) {
  // Weight and bias both cast: one MatmulColumnSums writes both gradients in float32. Either
  // one cast alone: that output only.
  for (Dtype dt : kHalfDtypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    array x = rand_as({7, 5}, dt, 170), g = rand_as({7, 3}, dt, 171);
    array w = random_array({3, 5}, float32, -1, 1, 172);
    array b = random_array({3}, float32, -1, 1, 173);
    auto grads = [&](bool cast_w, bool cast_b) {
      auto f = [&](const std::vector<array>& in) {
        array wc = cast_w ? astype(in[0], dt) : in[0];
        array bc = cast_b ? astype(in[1], dt) : in[1];
        return one(addmm(bc, x, transpose(wc)));
      };
      return vjp(f, {cast_w ? w : astype(w, dt), cast_b ? b : astype(b, dt)}, {g}).second;
    };
    array dw_ref = transpose(matmul(transpose(f64(x)), f64(g)));
    array db_ref = sum(f64(g), 0);
    auto both = grads(true, true);
    EXPECT_EQ(widening_casts(both), 0);
    EXPECT_EQ(count_primitives<MatmulColumnSums>(both), 1);
    auto& step = product_under(both[0]).primitive();
    ASSERT_TRUE(dynamic_cast<MatmulColumnSums*>(&step));
    EXPECT_EQ(static_cast<MatmulColumnSums&>(step).float32_outputs(), 3);
    expect_float32_close(both[0], dw_ref);
    expect_float32_close(both[1], db_ref);
    auto weight_only = grads(true, false);
    EXPECT_EQ(widening_casts(weight_only), 0);
    expect_float32_close(weight_only[0], dw_ref);
    EXPECT_EQ(weight_only[1].dtype(), dt);
    expect_close(weight_only[1], to_vector(db_ref), {3}, 1e-2, 1e-2);
    auto bias_only = grads(false, true);
    EXPECT_EQ(widening_casts(bias_only), 0);
    EXPECT_EQ(bias_only[0].dtype(), dt);
    expect_close(bias_only[0], to_vector(dw_ref), {3, 5}, 1e-2, 1e-2);
    expect_float32_close(bias_only[1], db_ref);
  }
}

TEST(LinalgRules, MixedPrecisionFoldOnlyUnsharedProducts) {
  // AsType's rule on a product's 16-bit result that something else reads (here a handle, an
  // evaluated product, a second consumer through a view): a cast, the product untouched.
  Stream s = default_stream(default_device());
  array w = random_array({3, 4}, float32, -1, 1, 180);
  array a = rand_as({4, 2}, bfloat16, 181), b = rand_as({2, 3}, bfloat16, 182);
  AsType rule(s, bfloat16);
  auto cast_of = [&](std::vector<array> cotangent) {
    return rule.vjp({w}, cotangent, {0}, {astype(w, bfloat16)})[0];
  };
  auto is_cast = [](const array& x) { return dynamic_cast<AsType*>(&x.primitive()) != nullptr; };
  // Each cotangent is built in a statement of its own, so that its vector holds its only
  // handle and no temporary of the expression holds the product.
  auto alone = [](array x) {
    std::vector<array> v;
    v.push_back(std::move(x));
    return v;
  };
  array p = matmul(a, b);
  auto ct = alone(transpose(p));  // p is also held here
  array shared = cast_of(std::move(ct));
  EXPECT_TRUE(is_cast(shared));
  EXPECT_EQ(p.dtype(), bfloat16);
  EXPECT_FALSE(static_cast<Matmul&>(p.primitive()).float32_out());
  ct = alone(transpose(matmul(a, b)));
  eval(ct);
  EXPECT_TRUE(is_cast(cast_of(std::move(ct))));
  ct = alone(transpose(matmul(a, b)));
  array other = reshape(ct[0].inputs()[0], {12});  // a second consumer
  EXPECT_TRUE(is_cast(cast_of(std::move(ct))));
  EXPECT_EQ(other.dtype(), bfloat16);
  // A cast as cotangent, or a cast to float64, is left to the plain rule.
  ct = alone(transpose(astype(matmul(a, b), float16)));
  EXPECT_TRUE(is_cast(cast_of(std::move(ct))));
  ct = alone(transpose(matmul(a, b)));
  EXPECT_TRUE(is_cast(AsType(s, float64).vjp({astype(w, float64)}, ct, {0}, {w})[0]));
  // The same product held by nothing else: stored in float32, no cast.
  ct = alone(transpose(matmul(a, b)));
  array folded = cast_of(std::move(ct));
  EXPECT_EQ(folded.dtype(), float32);
  EXPECT_TRUE(dynamic_cast<Transpose*>(&folded.primitive()));
  EXPECT_TRUE(static_cast<Matmul&>(folded.inputs()[0].primitive()).float32_out());
  expect_float32_close(folded, transpose(matmul(f64(a), f64(b))));
  // The others' values are right too.
  expect_close(shared, to_vector(transpose(p)), {3, 4}, 0, 0);
  expect_close(other, to_vector(p), {12}, 0, 0);
}

TEST(LinalgRules, MixedPrecisionSecondDerivative) {
  // d/dx <dW(x), V> for dW = g^T x from x @ W.T with x and W float32 cast to bfloat16: through
  // the float32 product's own rule (V cast to bfloat16 for its product) the result is g @ V.
  array x = random_array({6, 5}, float32, -1, 1, 190),
        w = random_array({3, 5}, float32, -1, 1, 191);
  array g = rand_as({6, 3}, bfloat16, 192), v = random_array({3, 5}, float32, -1, 1, 193);
  auto f = [](const std::vector<array>& in) {
    return one(matmul(astype(in[0], bfloat16), transpose(astype(in[1], bfloat16))));
  };
  auto inner = [&](const std::vector<array>& in) {
    array dw = vjp(f, {in[0], w}, {g}).second[1];
    EXPECT_EQ(dw.dtype(), float32);
    return one(sum(multiply(dw, v)));
  };
  array dx = vjp(inner, {x}, {array(1.0f)}).second[0];
  EXPECT_EQ(widening_casts({dx}), 0);
  array expected = matmul(f64(g), f64(astype(v, bfloat16)));
  expect_float32_close(dx, expected);
  // Forward mode through the float32 product: its tangent is float32 too.
  array t = random_array({6, 5}, float32, -1, 1, 194);
  array tangent = jvp(inner, {x}, {t}).second[0];
  EXPECT_EQ(tangent.dtype(), float32);
  // sum(dW' * v) with dW' = g^T t in float32 and v not rounded there.
  array tangent_ref = sum(multiply(matmul(f64(g), f64(v)), f64(astype(t, bfloat16))));
  expect_close(tangent, {tangent_ref.item<double>()}, {}, 1e-5, 1e-5);
}

TEST(LinalgRules, Float32ProductsOfHalfOperands) {
  // The float32 products themselves: values, and their jvp / vjp / vmap rules, which keep the
  // float32 output and give the operands 16-bit cotangents.
  for (Dtype dt : kHalfDtypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    array a = rand_as({2, 4, 5}, dt, 200), b = rand_as({2, 5, 3}, dt, 201);
    array p = mlx::core::detail::matmul(a, b, true);
    EXPECT_EQ(p.dtype(), float32);
    expect_float32_close(p, matmul(f64(a), f64(b)));
    EXPECT_EQ(mlx::core::detail::matmul(astype(a, float32), astype(b, float32), true).dtype(),
              float32);
    EXPECT_EQ(mlx::core::detail::matmul(f64(a), f64(b), true).dtype(), float64);
    auto wide = [](const std::vector<array>& in) {
      return one(mlx::core::detail::matmul(in[0], in[1], true));
    };
    array ta = rand_as({2, 4, 5}, dt, 202), tb = rand_as({2, 5, 3}, dt, 203);
    auto [outs, tangents] = jvp(wide, {a, b}, {ta, tb});
    expect_float32_close(tangents[0], add(matmul(f64(ta), f64(b)), matmul(f64(a), f64(tb))));
    array ct = random_array({2, 4, 3}, float32, -1, 1, 204);
    auto grads = vjp(wide, {a, b}, {ct}).second;
    EXPECT_EQ(grads[0].dtype(), dt);
    EXPECT_EQ(grads[1].dtype(), dt);
    array ct16 = f64(astype(ct, dt));
    expect_close(grads[0], to_vector(matmul(ct16, swapaxes(f64(b), -1, -2))), {2, 4, 5}, 1e-2,
                 1e-2);
    check_vmap(wide, {a, b}, {0, 0});
    check_vmap(wide, {a, take(b, 0, 0)}, {0, -1});
    // Batched per-example mixed-precision gradients: vmap of the whole rule.
    array w = random_array({3, 5}, float32, -1, 1, 205);
    auto per_example = [dt, w](const std::vector<array>& in) {
      auto f = [dt](const std::vector<array>& x) {
        return one(matmul(x[1], transpose(astype(x[0], dt))));
      };
      return std::vector<array>{vjp(f, {w, in[0]}, {in[1]}).second[0]};
    };
    check_vmap(per_example, {rand_as({2, 4, 5}, dt, 206), rand_as({2, 4, 3}, dt, 207)}, {0, 0}, {0},
               1e-5);
  }
}

TEST(LinalgRules, Float32ColumnSumsOfHalfOperands) {
  // MatmulColumnSums with float32 outputs through its rules: vmap and derivatives of the
  // mixed-precision Linear gradients.
  array x = rand_as({5, 4}, bfloat16, 210), g = rand_as({5, 2}, bfloat16, 211);
  auto grads = [&](const std::vector<array>& in) {
    auto f = [&](const std::vector<array>& p) {
      return one(addmm(astype(p[1], bfloat16), in[0], transpose(astype(p[0], bfloat16))));
    };
    return vjp(f,
               {random_array({2, 4}, float32, -1, 1, 212), random_array({2}, float32, -1, 1, 213)},
               {in[1]})
        .second;
  };
  check_vmap(grads, {rand_as({3, 5, 4}, bfloat16, 214), rand_as({3, 5, 2}, bfloat16, 215)}, {0, 0},
             {0, 0}, 1e-5);
  auto out = grads({x, g});
  EXPECT_EQ(out[0].dtype(), float32);
  EXPECT_EQ(out[1].dtype(), float32);
  // Its jvp and vjp keep the float32 outputs and give 16-bit operand cotangents.
  array l = rand_as({4, 5}, bfloat16, 216), r = rand_as({5, 2}, bfloat16, 217);
  auto mcs = [](const std::vector<array>& in) {
    return array::make_arrays(
        {{in[0].shape(0), in[1].shape(1)}, {1, in[1].shape(1)}}, {float32, float32},
        std::make_shared<MatmulColumnSums>(default_stream(default_device()), 3), in);
  };
  auto [outs, tangents] = jvp(mcs, {l, r}, {l, r});
  EXPECT_EQ(tangents[0].dtype(), float32);
  EXPECT_EQ(tangents[1].dtype(), float32);
  expect_float32_close(tangents[0], multiply(matmul(f64(l), f64(r)), array(2.0, float64)));
  expect_float32_close(tangents[1], sum(f64(r), 0, true));
  auto cts = vjp(mcs, {l, r}, {outs[0], outs[1]}).second;
  EXPECT_EQ(cts[0].dtype(), bfloat16);
  EXPECT_EQ(cts[1].dtype(), bfloat16);
  expect_float32_close(outs[0], matmul(f64(l), f64(r)));
  expect_float32_close(outs[1], sum(f64(r), 0, true));
}

TEST(LinalgRules, Float32ProductsAreNotMergedWithHalfOnes) {
  // compile's CSE keeps a 16-bit product and the float32 one of the same operands apart.
  Stream s = default_stream(default_device());
  EXPECT_FALSE(Matmul(s).is_equivalent(Matmul(s, true)));
  EXPECT_TRUE(Matmul(s, true).is_equivalent(Matmul(s, true)));
  EXPECT_FALSE(MatmulColumnSums(s, 1).is_equivalent(MatmulColumnSums(s, 3)));
  auto both = [](const std::vector<array>& in) {
    return std::vector<array>{matmul(in[0], in[1]), mlx::core::detail::matmul(in[0], in[1], true)};
  };
  array a = rand_as({3, 4}, bfloat16, 220), b = rand_as({4, 2}, bfloat16, 221);
  auto out = compile(both)({a, b});
  EXPECT_EQ(out[0].dtype(), bfloat16);
  EXPECT_EQ(out[1].dtype(), float32);
  expect_float32_close(out[1], matmul(f64(a), f64(b)));
  // A compiled mixed-precision gradient equals the uncompiled one.
  array w = random_array({2, 4}, float32, -1, 1, 222);
  auto grad_fn = [](const std::vector<array>& in) {
    auto f = [&](const std::vector<array>& p) {
      return one(astype(matmul(in[1], transpose(astype(p[0], bfloat16))), float32));
    };
    return vjp(f, {in[0]}, {ones({3, 2})}).second;
  };
  auto compiled = compile(grad_fn)({w, a});
  auto plain = grad_fn({w, a});
  EXPECT_EQ(compiled[0].dtype(), float32);
  expect_close(compiled[0], to_vector(plain[0]), {2, 4}, 0, 0);
}

}  // namespace
}  // namespace mlx::core::test
