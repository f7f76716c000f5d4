// Transform rules (jvp, vjp, vmap) of the layout primitives, checked through the public ops
// that create them and through composites built from them.
#include <gtest/gtest.h>

#include "mlx/mlx.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

array rnd(const Shape& shape, uint32_t seed = 0) {
  return random_array(shape, float64, -1, 1, seed);
}

// The cotangent map (x, c) -> vjp(f)(x, c) built from the rules must itself be differentiable
// in c and batchable (grad of grad, vmap of grad). f has one output.
void check_rules_of_vjp(const ArrayFn& f, const std::vector<array>& x) {
  std::vector<array> in = x;
  in.push_back(rnd(f(x)[0].shape(), 99));
  int n = static_cast<int>(x.size());
  ArrayFn g = [f, n](const std::vector<array>& a) {
    std::vector<array> primals(a.begin(), a.begin() + n);
    return vjp(f, primals, {a[n]}).second;
  };
  check_grad(g, in, {.argnums = {n}});
  // Batch every input along a new leading axis of size 2.
  std::vector<array> batched;
  for (auto& a : in) {
    batched.push_back(stack({a, negative(a)}));
  }
  check_vmap(g, batched, std::vector<int>(in.size(), 0));
}

void check_rules_of_vjp(const UnaryFn& f, const array& x) {
  check_rules_of_vjp([f](const std::vector<array>& a) { return std::vector<array>{f(a[0])}; }, {x});
}

// Copy, AsType

TEST(ShapeRules, Copy) {
  check_grad([](const array& x) { return copy(x); }, rnd({2, 3}));
  check_grad([](const array& x) { return copy(transpose(x)); }, rnd({2, 3}));
  check_grad([](const array& x) { return copy(x); }, rnd({}));
  check_vmap([](const array& x) { return copy(x); }, rnd({2, 3, 4}), 1, 2);
  check_vmap([](const array& x) { return contiguous(transpose(x)); }, rnd({3, 4, 2}), 2, 1);
}

TEST(ShapeRules, AsType) {
  // float32 -> float64 keeps every value exact; the cotangent comes back as float32.
  GradCheckOptions loose;
  check_grad([](const array& x) { return astype(x, float64); }, random_array({2, 3}), loose);
  check_grad([](const array& x) { return astype(astype(x, float32), float64); },
             random_array({3}, float32), loose);
  check_grad([](const array& x) { return astype(x, complex64); }, random_array({4}), loose);
  check_vmap([](const array& x) { return astype(x, float32); }, rnd({2, 3, 4}), 1, 2);
  check_vmap([](const array& x) { return astype(x, int32); }, rnd({3, 2}, 1), 0, 1);
}

TEST(ShapeRules, AsTypeToIntegerHasZeroDerivatives) {
  auto f = [](const array& x) { return astype(astype(x, int32), float64); };
  array x = rnd({2, 3}, 4);
  auto [out, ct] = vjp(f, x, rnd({2, 3}, 5));
  EXPECT_EQ(ct.dtype(), float64);
  expect_close(ct, std::vector<double>(6, 0.0), {2, 3});
  auto [out2, tan] = jvp(f, x, rnd({2, 3}, 6));
  expect_close(tan, std::vector<double>(6, 0.0), {2, 3});
}

// Broadcast

TEST(ShapeRules, Broadcast) {
  check_grad([](const array& x) { return broadcast_to(x, {2, 3, 4}); }, rnd({3, 1}));
  check_grad([](const array& x) { return broadcast_to(x, {2, 3}); }, rnd({}));
  check_grad([](const array& x) { return broadcast_to(x, {1, 3}); }, rnd({3}));
  check_grad([](const array& x) { return broadcast_to(x, {4, 1}); }, rnd({1}));
  check_grad([](const array& x) { return broadcast_to(transpose(x), {2, 3, 2}); }, rnd({2, 3}));
  check_vmap([](const array& x) { return broadcast_to(x, {2, 3, 4}); }, rnd({5, 3, 1}), 0, 0);
  check_vmap([](const array& x) { return broadcast_to(x, {2, 3, 4}); }, rnd({3, 5, 1}), 1, 3);
  check_vmap([](const array& x) { return broadcast_to(x, {2, 3}); }, rnd({4}), 0, 1);
  check_vmap([](const array& x) { return broadcast_to(x, {2, 0}); }, rnd({3, 1}), 0, 0);
}

TEST(ShapeRules, BroadcastSecondOrder) {
  check_rules_of_vjp([](const array& x) { return broadcast_to(x, {2, 3, 4}); }, rnd({3, 1}));
}

// Reshape and the composites made of it

TEST(ShapeRules, Reshape) {
  check_grad([](const array& x) { return reshape(x, {3, 2}); }, rnd({2, 3}));
  check_grad([](const array& x) { return reshape(transpose(x), {6}); }, rnd({2, 3}));
  check_grad([](const array& x) { return reshape(x, {1, 1}); }, rnd({}));
  check_grad([](const array& x) { return flatten(x, 1, 2); }, rnd({2, 3, 2}));
  check_grad([](const array& x) { return unflatten(x, 0, {2, 3}); }, rnd({6, 2}));
  check_grad([](const array& x) { return squeeze(x, 1); }, rnd({3, 1, 2}));
  check_grad([](const array& x) { return expand_dims(x, {0, 2}); }, rnd({3, 2}));
  check_grad([](const array& x) { return atleast_3d(x); }, rnd({4}));
  check_vmap([](const array& x) { return reshape(x, {4, 3}); }, rnd({2, 3, 4}), 0, 2);
  check_vmap([](const array& x) { return flatten(x); }, rnd({3, 2, 4}), 1, 1);
  check_vmap([](const array& x) { return squeeze(x); }, rnd({3, 1, 2}), 2, 0);
  check_vmap([](const array& x) { return reshape(x, {0, 3}); }, rnd({2, 3, 0}), 1, 0);
  check_vmap([](const array& x) { return reshape(x, {1}); }, rnd({1}), 0, 0);
  check_rules_of_vjp([](const array& x) { return flatten(transpose(x)); }, rnd({2, 3}));
}

TEST(ShapeRules, Transpose) {
  check_grad([](const array& x) { return transpose(x, {2, 0, 1}); }, rnd({2, 3, 2}));
  check_grad([](const array& x) { return transpose(x); }, rnd({3, 4}));
  check_grad([](const array& x) { return moveaxis(x, 0, 2); }, rnd({2, 1, 3}));
  check_grad([](const array& x) { return swapaxes(x, -1, 0); }, rnd({2, 3, 2}));
  check_vmap([](const array& x) { return transpose(x, {2, 0, 1}); }, rnd({2, 3, 4, 2}), 2, 3);
  check_vmap([](const array& x) { return transpose(x); }, rnd({3, 4, 2}), 0, 1);
  check_vmap([](const array& x) { return swapaxes(x, 0, 1); }, rnd({3, 4, 2}), 2, 0);
  check_rules_of_vjp([](const array& x) { return transpose(x, {1, 2, 0}); }, rnd({2, 3, 2}));
}

// Slice

TEST(ShapeRules, Slice) {
  check_grad([](const array& x) { return slice(x, {1, 0}, {3, 4}, {1, 2}); }, rnd({4, 5}));
  check_grad([](const array& x) { return slice(x, {-1, 4}, {-5, 0}, {-2, -3}); }, rnd({4, 5}));
  check_grad([](const array& x) { return slice(x, {3}, {-10}, {-1}); }, rnd({5}));
  check_grad([](const array& x) { return slice(x, {0, 1}, {1, 2}); }, rnd({1, 3}));
  check_grad([](const array& x) { return slice(transpose(x), {1, 0}, {3, 2}); }, rnd({3, 4}));
  // An empty slice: the gradient is all zeros.
  check_grad([](const array& x) { return slice(x, {2}, {2}); }, rnd({4}));
  check_grad([](const array& x) { return flip(x); }, rnd({3, 2}));
  check_grad([](const array& x) { return flip(x, {1}); }, rnd({2, 3}));
}

TEST(ShapeRules, SliceGradientValues) {
  // x[4:0:-2] reads x[4] and x[2].
  auto f = [](const array& x) { return slice(x, {4}, {0}, {-2}); };
  auto [out, ct] = vjp(f, rnd({5}), array({10.0, 20.0}));
  expect_close(ct, {0, 0, 20, 0, 10});
}

TEST(ShapeRules, SplitAndUnstack) {
  check_grad([](const std::vector<array>& x) { return split(x[0], 3, 1); }, {rnd({2, 6})});
  check_grad(
      [](const std::vector<array>& x) {
        return split(x[0], Shape{1, 4}, 0);
      },
      {rnd({5, 2})});
  check_grad([](const std::vector<array>& x) { return unstack(x[0], 1); }, {rnd({2, 3})});
  check_vmap([](const std::vector<array>& x) { return split(x[0], 2, -1); }, {rnd({4, 3, 2})}, {1},
             {2, 0});
}

TEST(ShapeRules, SliceVmap) {
  auto f = [](const array& x) { return slice(x, {-1, 1}, {-4, 4}, {-1, 2}); };
  check_vmap(f, rnd({2, 4, 5}), 0, 0);
  check_vmap(f, rnd({4, 3, 5}), 1, 2);
  check_vmap(f, rnd({4, 5, 3}), 2, 1);
  check_vmap(f, rnd({1, 4, 5}), 0, 0);
  check_vmap([](const array& x) { return flip(x); }, rnd({3, 4}), 1, 0);
  // A 0-size axis besides the batch axis.
  check_vmap([](const array& x) { return slice(x, {0, 1}, {0, 3}); }, rnd({2, 0, 4}), 0, 1);
  check_rules_of_vjp(f, rnd({4, 5}));
}

TEST(ShapeRules, SliceVmapOfEmptyBatch) {
  auto f = vmap([](const array& x) { return slice(x, {1}, {3}); });
  array y = f(zeros({0, 4}, float64));
  EXPECT_EQ(y.shape(), (Shape{0, 2}));
}

// AsStrided

TEST(ShapeRules, AsStrided) {
  // Overlapping sliding windows: elements read several times accumulate their cotangents.
  check_grad([](const array& x) { return as_strided(x, {3, 3}, {1, 1}, 0); }, rnd({5}));
  check_grad([](const array& x) { return as_strided(x, {2, 2}, {3, 1}, 2); }, rnd({3, 3}));
  check_grad([](const array& x) { return as_strided(x, {2, 3}, {-2, -1}, 8); }, rnd({3, 3}));
  check_grad(
      [](const array& x) {
        return as_strided(transpose(x), {3, 2}, {2, 1}, 0);
      },
      rnd({2, 3}));
  check_grad([](const array& x) { return as_strided(x, {4}, {0}, 1); }, rnd({2}));
  check_grad([](const array& x) { return as_strided(x, {}, {}, 3); }, rnd({2, 2}));
  check_grad([](const array& x) { return as_strided(x, {0, 2}, {1, 1}, 0); }, rnd({3}));
}

TEST(ShapeRules, AsStridedGradientValues) {
  auto f = [](const array& x) { return as_strided(x, {3, 2}, {1, 1}, 0); };
  auto [out, ct] = vjp(f, rnd({4}), ones({3, 2}, float64));
  expect_close(ct, {1, 2, 2, 1});
}

TEST(ShapeRules, AsStridedVmap) {
  auto f = [](const array& x) { return as_strided(x, {3, 2}, {2, 1}, 1); };
  check_vmap(f, rnd({3, 2, 4}), 0, 0);
  check_vmap(f, rnd({2, 3, 4}), 1, 2);
  check_vmap(f, rnd({2, 4, 3}), 2, 1);
  check_vmap(f, rnd({2, 4, 1}), 2, 0);
  check_vmap([](const array& x) { return as_strided(transpose(x), {3}, {3}, 0); }, rnd({3, 2, 3}),
             1, 0);
}

TEST(ShapeRules, AsStridedSecondOrder) {
  check_rules_of_vjp([](const array& x) { return as_strided(x, {3, 2}, {1, 1}, 0); }, rnd({2, 2}));
}

// Concatenate and the composites made of it

TEST(ShapeRules, Concatenate) {
  auto three = [](const std::vector<array>& x) {
    return std::vector<array>{concatenate({x[0], x[1], x[2]}, 1)};
  };
  check_grad(three, {rnd({2, 1}, 1), rnd({2, 3}, 2), rnd({2, 2}, 3)});
  check_grad(three, {rnd({2, 0}, 1), rnd({2, 3}, 2), rnd({2, 1}, 3)});
  // Broadcast and non-contiguous inputs, a negative axis and an input used twice.
  check_grad(
      [](const std::vector<array>& x) {
        return std::vector<array>{
            concatenate({broadcast_to(x[0], {3, 2}), transpose(x[1]), x[0]}, -1)};
      },
      {rnd({3, 1}, 1), rnd({4, 3}, 2)});
  check_grad([](const std::vector<array>& x) { return std::vector<array>{concatenate(x)}; },
             {rnd({2, 2}, 1), rnd({3}, 2)});
  // Only some inputs differentiated.
  check_grad(three, {rnd({2, 1}, 1), rnd({2, 3}, 2), rnd({2, 2}, 3)}, {.argnums = {1}});
}

TEST(ShapeRules, ConcatenateMixedDtypes) {
  auto f = [](const std::vector<array>& x) {
    return std::vector<array>{concatenate({x[0], x[1], x[2]}, 0)};
  };
  std::vector<array> in{array({1.0f, 2.0f}), array({3.0, 4.0, 5.0}, float64), array({6, 7})};
  auto [outs, cts] = vjp(f, in, {array({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0})});
  EXPECT_EQ(outs[0].dtype(), float64);
  EXPECT_EQ(cts[0].dtype(), float32);
  expect_close(cts[0], {1, 2});
  expect_close(cts[1], {3, 4, 5});
  expect_close(cts[2], {0, 0});
  auto [outs2, tans] =
      jvp(f, in, {array({1.0f, 1.0f}), array({2.0, 2.0, 2.0}, float64), array({5, 5})});
  EXPECT_EQ(tans[0].dtype(), float64);
  expect_close(tans[0], {1, 1, 2, 2, 2, 0, 0});
}

TEST(ShapeRules, ConcatenateVmap) {
  auto f = [](const std::vector<array>& x) {
    return std::vector<array>{concatenate({x[0], x[1], x[2]}, 1)};
  };
  std::vector<array> in{rnd({3, 2, 1}, 1), rnd({2, 3, 3}, 2), rnd({2, 2}, 3)};
  // Mapped along different axes, one input unmapped.
  check_vmap(f, in, {0, 1, -1}, {1});
  check_vmap(f, {rnd({2, 1, 3}, 1), rnd({2, 3}, 2), rnd({2, 2, 3}, 3)}, {2, -1, 2}, {0});
  check_vmap(f, {rnd({1, 2, 1}, 1), rnd({1, 2, 3}, 2), rnd({1, 2, 0}, 3)}, {0, 0, 0}, {2});
  check_vmap(f, {rnd({2, 2}, 1), rnd({2, 3}, 2), rnd({2, 2, 4}, 3)}, {-1, -1, 2}, {0});
  check_vmap([](const std::vector<array>& x) { return std::vector<array>{concatenate(x)}; },
             {rnd({4, 2, 2}, 1), rnd({3, 4}, 2)}, {0, 1});
  check_rules_of_vjp(
      [](const std::vector<array>& x) {
        return std::vector<array>{concatenate({x[0], x[1], x[2]}, 0)};
      },
      {rnd({2, 3}, 1), rnd({1, 3}, 2), rnd({2, 3}, 3)});
}

TEST(ShapeRules, StackRollTileRepeat) {
  check_grad(
      [](const std::vector<array>& x) {
        return std::vector<array>{stack({x[0], x[1], x[0]}, 1)};
      },
      {rnd({2, 3}, 1), rnd({2, 3}, 2)});
  check_grad([](const array& x) { return roll(x, 2, 1); }, rnd({2, 5}));
  check_grad(
      [](const array& x) {
        return roll(x, Shape{1, -1}, std::vector<int>{0, 1});
      },
      rnd({3, 4}));
  check_grad([](const array& x) { return roll(x, 4); }, rnd({2, 3}));
  check_grad([](const array& x) { return tile(x, {2, 1, 3}); }, rnd({2, 2}));
  check_grad([](const array& x) { return repeat(x, 3, 1); }, rnd({2, 2}));
  check_grad([](const array& x) { return repeat(x, 2); }, rnd({3}));
  check_grad(
      [](const array& x) {
        return pad(x, {{1, 2}, {0, 1}}, array(0), "edge");
      },
      rnd({2, 3}));
  check_vmap(
      [](const std::vector<array>& x) {
        return std::vector<array>{stack({x[0], x[1]}, -1)};
      },
      {rnd({2, 3, 4}, 1), rnd({2, 4}, 2)}, {1, -1}, {1});
  check_vmap([](const array& x) { return roll(x, 1, 0); }, rnd({3, 4}), 1, 0);
  check_vmap([](const array& x) { return tile(x, {2, 2}); }, rnd({3, 2}), 0, 1);
  check_vmap([](const array& x) { return repeat(x, 2, 0); }, rnd({2, 3}), 1, 0);
  check_vmap([](const array& x) { return pad(x, {{1, 1}}, array(0), "edge"); }, rnd({3, 2}), 0, 0);
}

// SliceUpdate

TEST(ShapeRules, SliceUpdate) {
  auto f = [](const std::vector<array>& x) {
    return std::vector<array>{slice_update(x[0], x[1], {0, 1}, {4, 5}, {2, 2})};
  };
  check_grad(f, {rnd({4, 5}, 1), rnd({2, 2}, 2)});
  auto neg = [](const std::vector<array>& x) {
    return std::vector<array>{slice_update(x[0], x[1], {-1, 3}, {0, -10}, {-1, -2})};
  };
  check_grad(neg, {rnd({3, 4}, 1), rnd({2, 2}, 2)});
  // The update broadcast into the slice (its cotangent is summed) and a transposed source.
  check_grad(
      [](const std::vector<array>& x) {
        return std::vector<array>{slice_update(transpose(x[0]), x[1], {1, 0}, {3, 3})};
      },
      {rnd({3, 4}, 1), rnd({3}, 2)});
  check_grad(f, {rnd({4, 5}, 1), rnd({2, 2}, 2)}, {.argnums = {0}});
  check_grad(f, {rnd({4, 5}, 1), rnd({2, 2}, 2)}, {.argnums = {1}});
  check_grad(
      [](const std::vector<array>& x) {
        return std::vector<array>{slice_update(x[0], x[1], {0}, {1})};
      },
      {rnd({1}, 1), rnd({1}, 2)});
}

TEST(ShapeRules, SliceUpdateGradientValues) {
  auto f = [](const std::vector<array>& x) {
    return std::vector<array>{slice_update(x[0], x[1], {3}, {-6}, {-2})};
  };
  auto [outs, cts] = vjp(f, {rnd({4}, 1), rnd({2}, 2)}, {array({1.0, 2.0, 3.0, 4.0})});
  expect_close(cts[0], {1, 0, 3, 0});
  expect_close(cts[1], {4, 2});
}

TEST(ShapeRules, SliceUpdateIntoIntegerSourceIsConstant) {
  auto f = [](const std::vector<array>& x) {
    return std::vector<array>{slice_update(zeros({4}, int32), x[0], {1}, {3})};
  };
  auto [outs, tans] = jvp(f, {array({1.5, 2.5})}, {array({1.0, 1.0})});
  EXPECT_EQ(tans[0].dtype(), int32);
  expect_close(tans[0], {0, 0, 0, 0});
}

TEST(ShapeRules, PadAndDiag) {
  check_grad([](const array& x) { return pad(x, {{1, 2}, {0, 1}}); }, rnd({2, 3}));
  check_grad([](const array& x) { return pad(x, 1, array(3.0)); }, rnd({2}));
  check_grad([](const array& x) { return diag(x, -1); }, rnd({3}));
  check_grad([](const array& x) { return diag(x, 2); }, rnd({4, 3}));
  check_vmap([](const array& x) { return pad(x, {{1, 0}, {2, 1}}); }, rnd({2, 3, 2}), 1, 2);
  check_vmap([](const array& x) { return diag(x, 1); }, rnd({3, 2}), 1, 0);
  check_rules_of_vjp([](const array& x) { return pad(x, {{1, 2}}); }, rnd({3}));
}

TEST(ShapeRules, SliceUpdateVmap) {
  auto f = [](const std::vector<array>& x) {
    return std::vector<array>{slice_update(x[0], x[1], {2, 0}, {-5, 3}, {-1, 2})};
  };
  array src = rnd({3, 4}, 1), upd = rnd({3, 2}, 2);
  check_vmap(f, {rnd({2, 3, 4}, 1), rnd({2, 3, 2}, 2)}, {0, 0}, {0});
  check_vmap(f, {rnd({3, 2, 4}, 1), rnd({3, 2, 2}, 2)}, {1, 2}, {2});
  check_vmap(f, {rnd({3, 4, 2}, 1), upd}, {2, -1}, {1});
  check_vmap(f, {src, rnd({3, 2, 5}, 2)}, {-1, 2}, {0});
  check_vmap(f, {rnd({1, 3, 4}, 1), rnd({1, 3, 2}, 2)}, {0, 0}, {0});
  // Broadcast update inside f.
  check_vmap(
      [](const std::vector<array>& x) {
        return std::vector<array>{slice_update(x[0], x[1], {1, 1}, {3, 4})};
      },
      {src, rnd({3, 2}, 3)}, {-1, 1}, {1});
  check_rules_of_vjp(
      [](const std::vector<array>& x) {
        return std::vector<array>{slice_update(x[0], x[1], {3, 0}, {0, 4}, {-2, 3})};
      },
      {rnd({4, 4}, 1), rnd({2, 2}, 2)});
}

// Diagonal

TEST(ShapeRules, Diagonal) {
  check_grad([](const array& x) { return diagonal(x); }, rnd({3, 3}));
  check_grad([](const array& x) { return diagonal(x, 1); }, rnd({3, 4}));
  check_grad([](const array& x) { return diagonal(x, -2); }, rnd({4, 3}));
  check_grad([](const array& x) { return diagonal(x, 1, 0, 2); }, rnd({3, 2, 4}));
  check_grad([](const array& x) { return diagonal(x, -1, 2, 0); }, rnd({3, 2, 4}));
  check_grad([](const array& x) { return diagonal(x, 0, -1, 1); }, rnd({2, 3, 3}));
  check_grad([](const array& x) { return diagonal(transpose(x), 1); }, rnd({3, 3}));
  check_grad([](const array& x) { return diagonal(x, 5); }, rnd({2, 3}));
  check_grad([](const array& x) { return diagonal(x); }, rnd({1, 1}));
  check_grad([](const array& x) { return diagonal(x); }, rnd({2, 0}));
}

TEST(ShapeRules, DiagonalGradientValues) {
  auto f = [](const array& x) { return diagonal(x, -1); };
  auto [out, ct] = vjp(f, rnd({3, 2}), array({1.0, 2.0}));
  expect_close(ct, {0, 0, 1, 0, 0, 2}, {3, 2});
}

TEST(ShapeRules, DiagonalVmap) {
  auto f = [](const array& x) { return diagonal(x, 1, 0, 2); };
  check_vmap(f, rnd({2, 3, 2, 4}), 0, 0);
  check_vmap(f, rnd({3, 2, 2, 4}), 1, 1);
  check_vmap(f, rnd({3, 2, 2, 4}), 2, 2);
  check_vmap(f, rnd({3, 2, 4, 2}), 3, 0);
  auto g = [](const array& x) { return diagonal(x, -1, 1, 0); };
  check_vmap(g, rnd({3, 2, 4}), 0, 1);
  check_vmap(g, rnd({3, 2, 4}), 1, 0);
  check_vmap(g, rnd({3, 4, 2}), 2, 1);
  check_vmap(g, rnd({3, 2, 0}), 1, 0);
  check_vmap(g, rnd({1, 3, 3}), 0, 0);
  check_rules_of_vjp(f, rnd({3, 2, 4}));
}

// Compositions of the above with the triangle masks.

TEST(ShapeRules, Kron) {
  check_grad([](const std::vector<array>& x) { return std::vector<array>{kron(x[0], x[1])}; },
             {rnd({2, 2}, 1), rnd({3}, 2)});
}

TEST(ShapeRules, TrilTriu) {
  check_grad([](const array& x) { return tril(x, -1); }, rnd({3, 4}));
  check_grad([](const array& x) { return triu(x, 1); }, rnd({2, 3, 3}));
  check_vmap([](const array& x) { return tril(x); }, rnd({3, 2, 3}), 1, 0);
  check_vmap([](const array& x) { return triu(x, -1); }, rnd({3, 3, 2}), 2, 2);
}

// View

TEST(ShapeRules, ViewIsNotDifferentiable) {
  array x = random_array({2, 4});
  auto half = [](const array& a) { return view(a, float16); };
  EXPECT_THROW(vjp(half, x, zeros({2, 8}, float16)), std::invalid_argument);
  EXPECT_THROW(jvp(half, x, x), std::invalid_argument);
  auto same_size = [](const array& a) { return view(a, bfloat16); };
  EXPECT_THROW(vjp(same_size, astype(x, float16), zeros({2, 4}, bfloat16)), std::invalid_argument);
}

TEST(ShapeRules, ViewToIntegerHasZeroDerivatives) {
  auto f = [](const array& a) { return view(a, int32); };
  array x = random_array({2, 3});
  auto [out, tan] = jvp(f, x, x);
  EXPECT_EQ(tan.dtype(), int32);
  expect_close(tan, std::vector<double>(6, 0.0), {2, 3});
  auto g = [](const array& a) { return astype(view(a, int16), float32); };
  auto [out2, ct] = vjp(g, x, ones({2, 6}));
  expect_close(ct, std::vector<double>(6, 0.0), {2, 3});
}

TEST(ShapeRules, ViewVmap) {
  // Integer results avoid NaN bit patterns; the checker compares values.
  auto to_i16 = [](const array& a) { return view(a, int16); };
  check_vmap(to_i16, random_array({3, 2, 4}), 0, 0);
  check_vmap(to_i16, random_array({2, 4, 3}), 2, 1);
  check_vmap(to_i16, random_array({2, 3}), 1, 0);
  check_vmap(to_i16, random_array({2, 3}), 0, 1);
  auto to_i32 = [](const array& a) { return view(a, int32); };
  check_vmap(to_i32, array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4}, int16), 0, 0);
  check_vmap(to_i32, array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3}, int16), 1, 0);
  check_vmap(to_i32, random_array({3, 4}), 1, 1);
  check_vmap(to_i32, random_array({1, 0}), 0, 0);
}

}  // namespace
}  // namespace mlx::core::test
