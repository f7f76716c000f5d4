// Transform rules of the indexing, sorting and random-bits primitives: derivatives against
// finite differences, vmap against a loop.
#include <gtest/gtest.h>

#include "mlx/mlx.h"
#include "mlx/primitives/indexing.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

array f64(const Shape& shape, uint32_t seed) { return random_array(shape, float64, -1, 1, seed); }

// int32 indices in [lo, hi] (negative ones count from the end).
array random_indices(const Shape& shape, int lo, int hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> v(shape_size(shape));
  for (auto& x : v) {
    x = dist(gen);
  }
  return array(v, shape, int32);
}

using Unary = std::function<array(const array&)>;
using Binary = std::function<array(const array&, const array&)>;

ArrayFn one(Unary f) {
  return [f](const std::vector<array>& in) { return std::vector<array>{f(in[0])}; };
}
ArrayFn two(Binary f) {
  return [f](const std::vector<array>& in) { return std::vector<array>{f(in[0], in[1])}; };
}

// ---------------------------------------------------------------------------------------------
// Gather and GatherAxis

TEST(IndexingRules, TakeAlongAnAxisGrad) {
  array x = f64({4, 5}, 1);
  array repeated = array({3, -1, 0, 3}, int32);  // 3 twice: its gradient accumulates
  check_grad(one([&](const array& a) { return take(a, repeated, 1); }), {x});
  check_grad(one([&](const array& a) { return take(a, repeated, 0); }), {x});
  check_grad(one([&](const array& a) { return take(a, array({2, -4, 2, 1}, {2, 2}), 1); }), {x});
  check_grad(one([&](const array& a) { return take(a, array(-2), 0); }), {x});
}

TEST(IndexingRules, TakeFlatGrad) {
  array x = f64({3, 4}, 2);
  check_grad(one([](const array& a) { return take(a, array({11, 0, -2, 5, 0}, int32)); }), {x});
  check_grad(one([](const array& a) { return take(a, array({7}, uint32)); }), {x});
  check_grad(one([](const array& a) { return take(a, array(-3)); }), {x});  // scalar output
}

TEST(IndexingRules, TakeOfLaidOutInputsGrad) {
  array x = f64({4, 3}, 3);
  array idx = array({0, 2, 2, -1}, int32);
  check_grad(one([&](const array& a) { return take(transpose(a), idx, 1); }), {x});
  array y = f64({3}, 4);
  check_grad(one([&](const array& a) { return take(broadcast_to(a, {2, 3}), idx, 1); }), {y});
  // Stepped and reversed slices.
  array z = f64({5, 4}, 9);
  check_grad(one([&](const array& a) {
               return take(slice(a, {0, 0}, {5, 4}, {2, 1}), idx, 1);
             }),
             {z});
  check_grad(one([&](const array& a) {
               return take(slice(a, {-1, -1}, {-6, -5}, {-1, -2}), idx, 0);
             }),
             {z});
  check_grad(one([&](const array& a) {
               return take_along_axis(slice(a, {-1, 0}, {-6, 4}, {-2, 1}),
                                      array({3, 0}, {1, 2}, int32), 1);
             }),
             {z});
  check_grad(
      two([](const array& a, const array& u) {
        return scatter_add(slice(a, {-1, 0}, {-6, 4}, {-1, 2}), array({4, 0, 4}, int32), u, 0);
      }),
      {z, f64({3, 1, 2}, 10)});
  check_grad(one([](const array& a) {
               return sort(slice(a, {-1, -1}, {-6, -5}, {-2, -1}), 1);
             }),
             {z});
  // Size-1 axis.
  check_grad(one([&](const array& a) {
               return take(a, array({0, 0, -1}, int32), 0);
             }),
             {f64({1, 3}, 5)});
}

TEST(IndexingRules, GatherSeveralAxesGrad) {
  array x = f64({4, 5, 3}, 6);
  // Slices of (2, 2, 3) starting at (i0, i1, 0); overlapping slices accumulate.
  array i0 = array({0, 2, -2, 0}, int32);
  array i1 = array({1, 3, 0, 2}, int32);
  check_grad(one([&](const array& a) { return gather(a, {i0, i1}, {0, 1}, {2, 2, 3}); }), {x});
  // Broadcast index arrays: shape (2, 3) after broadcasting.
  array j0 = array({1, -1}, {2, 1}, int32);
  array j1 = array({4, 0, 2}, {1, 3}, int32);
  check_grad(one([&](const array& a) { return gather(a, {j0, j1}, {0, 1}, {1, 1, 2}); }), {x});
  // One indexed axis, partial slices of the others.
  array k = array({2, 0, 1}, int32);
  check_grad(one([&](const array& a) { return gather(a, k, 2, {3, 2, 1}); }), {x});
  check_grad(one([&](const array& a) {
               return gather(transpose(a, {2, 0, 1}), k, 0, {1, 2, 2});
             }),
             {x});
}

TEST(IndexingRules, TakeAlongAxisGrad) {
  array x = f64({3, 4}, 7);
  array idx = array({0, 3, 1, 1, -1, 2}, {3, 2}, int32);
  check_grad(one([&](const array& a) { return take_along_axis(a, idx, 1); }), {x});
  // Indices broadcast along the other axis.
  array row = array({2, -1, 0, 2}, {1, 4}, int32);
  check_grad(one([&](const array& a) { return take_along_axis(a, row, 0); }), {x});
  // A source broadcast along the other axis.
  check_grad(one([&](const array& a) {
               return take_along_axis(broadcast_to(a, {3, 4}), idx, 1);
             }),
             {f64({3, 1}, 8)});
  check_grad(one([&](const array& a) { return take_along_axis(transpose(a), row, 0); }),
             {f64({4, 3}, 10)});
}

// ---------------------------------------------------------------------------------------------
// Scatter and ScatterAxis

TEST(IndexingRules, ScatterGrad) {
  array x = f64({5, 3}, 11);
  array u = f64({3, 1, 3}, 12);
  auto f = [](array idx) {
    return two([idx](const array& a, const array& b) { return scatter(a, idx, b, 0); });
  };
  check_grad(f(array({0, 3, -1}, int32)), {x, u});
  // Duplicates: the last update wins, so the earlier one gets no gradient.
  array dup = array({1, 1, 3}, int32);
  check_grad(f(dup), {x, u});
  auto grads = mlx::core::detail::vjp(f(dup), {x, u}, {ones({5, 3}, float64)}, {0, 1}).second;
  expect_close(grads[1], {0, 0, 0, 1, 1, 1, 1, 1, 1}, {3, 1, 3});
  expect_close(grads[0], {1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1}, {5, 3});
}

TEST(IndexingRules, ScatterAddGrad) {
  array x = f64({4, 3}, 13);
  // Repeated (row, col) pairs accumulate; the slices (1, 2) overlap.
  array i0 = array({1, 1, -1}, int32);
  array i1 = array({0, 0, 1}, int32);
  auto f = two([&](const array& a, const array& u) { return scatter_add(a, {i0, i1}, u, {0, 1}); });
  check_grad(f, {x, f64({3, 1, 2}, 14)});
  // Updates broadcast over the index dimensions.
  check_grad(f, {x, f64({1, 1, 2}, 15)});
  auto g = mlx::core::detail::vjp(f, {x, f64({3, 1, 2}, 14)}, {f64({4, 3}, 16)}, {1}).second[0];
  auto c = to_vector(f64({4, 3}, 16));
  expect_close(g, {c[3], c[4], c[3], c[4], c[10], c[11]}, {3, 1, 2});
}

TEST(IndexingRules, ScatterProdGrad) {
  array x = f64({4, 2}, 17);
  // Position 0: two nonzero updates; 1: one zero update; 2: two zeros; 3: untouched.
  array idx = array({0, 0, 1, 2, 2}, int32);
  array u = array({2.0, -0.5, 0.75, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0, -2.0}, {5, 1, 2}, float64);
  auto f = two([&](const array& a, const array& b) { return scatter_prod(a, idx, b, 0); });
  check_grad(f, {x, u});
  check_grad(f, {x, f64({5, 1, 2}, 18)});
}

TEST(IndexingRules, ScatterMaxMinGrad) {
  array x = f64({4, 3}, 19);
  array idx = array({2, 0, 2, -1}, int32);
  array u = random_array({4, 1, 3}, float64, -1.5, 1.5, 20);
  check_grad(two([&](const array& a, const array& b) { return scatter_max(a, idx, b, 0); }),
             {x, u});
  check_grad(two([&](const array& a, const array& b) { return scatter_min(a, idx, b, 0); }),
             {x, u});
  // A tie between a and an update shares the cotangent.
  array a = array({1.0, 2.0}, float64);
  array b = array({1.0}, {1, 1}, float64);
  auto f =
      two([](const array& p, const array& q) { return scatter_max(p, array({0}, int32), q, 0); });
  auto g = mlx::core::detail::vjp(f, {a, b}, {ones({2}, float64)}, {0, 1}).second;
  expect_close(g[0], {0.5, 1.0});
  expect_close(g[1], {0.5}, {1, 1});
}

TEST(IndexingRules, PutAlongAxisGrad) {
  array x = f64({3, 4}, 21);
  array idx = array({0, 3, -1, 1, 2, 0}, {3, 2}, int32);
  auto f = [](array i) {
    return two([i](const array& a, const array& v) { return put_along_axis(a, i, v, 1); });
  };
  check_grad(f(idx), {x, f64({3, 2}, 22)});
  // Values broadcast along the rows, indices along the rows too.
  check_grad(f(array({2, 0}, {1, 2}, int32)), {x, f64({1, 2}, 23)});
  // Duplicates within a row: the last one is kept.
  array dup = array({1, 1, 0, 2, 3, 3}, {3, 2}, int32);
  check_grad(f(dup), {x, f64({3, 2}, 24)});
  auto g =
      mlx::core::detail::vjp(f(dup), {x, f64({3, 2}, 24)}, {ones({3, 4}, float64)}, {1}).second[0];
  expect_close(g, {0, 1, 1, 1, 0, 1}, {3, 2});
}

TEST(IndexingRules, ScatterAddAxisGrad) {
  array x = f64({3, 4}, 25);
  array idx = array({1, 1, -1, 0, 0, 2}, {3, 2}, int32);
  check_grad(two([&](const array& a, const array& v) { return scatter_add_axis(a, idx, v, 1); }),
             {x, f64({3, 2}, 26)});
  array idx0 = array({2, 2, 0, 1}, {1, 4}, int32);
  check_grad(two([&](const array& a, const array& v) { return scatter_add_axis(a, idx0, v, 0); }),
             {x, f64({1, 4}, 27)});
}

// ScatterAxis with the reductions no public op exposes, built directly.
TEST(IndexingRules, ScatterAxisReductionsGrad) {
  array idx = array({1, 1, -1, 0, 0, 2}, {3, 2}, int32);
  for (auto reduce : {ScatterReduce::Prod, ScatterReduce::Max, ScatterReduce::Min}) {
    auto f = two([&](const array& a, const array& v) {
      return array(a.shape(), a.dtype(),
                   std::make_shared<ScatterAxis>(default_stream(default_device()), reduce, 1),
                   {a, idx, v});
    });
    check_grad(f, {f64({3, 4}, 28), random_array({3, 2}, float64, -1.5, 1.5, 29)});
  }
}

// ---------------------------------------------------------------------------------------------
// Sorting

TEST(IndexingRules, SortGrad) {
  array x = f64({3, 4}, 30);
  check_grad(one([](const array& a) { return sort(a, 0); }), {x});
  check_grad(one([](const array& a) { return sort(a, -1); }), {x});
  check_grad(one([](const array& a) { return sort(a); }), {x});
  check_grad(one([](const array& a) { return sort(transpose(a), 1); }), {x});
  check_grad(one([](const array& a) { return sort(a, 0); }), {f64({1, 5}, 31)});
}

TEST(IndexingRules, PartitionGrad) {
  array x = f64({4, 6}, 32);
  for (int kth : {0, 2, -1}) {
    check_grad(one([kth](const array& a) { return partition(a, kth, 1); }), {x});
    check_grad(one([kth](const array& a) { return partition(a, kth, 0); }), {x});
  }
  check_grad(one([](const array& a) { return partition(a, 7); }), {x});
}

// With ties the arrangement is the kernel's; whichever tied element a position came from, a
// cotangent that is a function of the output value must come back as that function of each
// input, and a tangent equal to the input must come out as the output.
TEST(IndexingRules, SortAndPartitionWithTiesRouteByValue) {
  std::vector<double> v(150);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<double>((i * 7 + i / 13) % 5);
  }
  array x = array(v.data(), {3, 50}, float64);
  for (int kth : {0, 17, 49}) {
    for (int axis : {0, 1}) {
      if (axis == 0 && kth > 2) {
        continue;
      }
      auto f = [&](const array& a) {
        return kth == 0 && axis == 1 ? sort(a, axis) : partition(a, kth, axis);
      };
      array out = f(x);
      auto g = vjp(f, x, multiply(out, out)).second;
      expect_close(g, to_vector(multiply(x, x)), x.shape());
      auto t = jvp(f, x, x).second;
      expect_close(t, to_vector(out), x.shape());
    }
  }
}

TEST(IndexingRules, TopkGrad) {
  array x = f64({3, 5}, 33);
  check_grad(one([](const array& a) { return topk(a, 2, 1); }), {x});
  check_grad(one([](const array& a) { return topk(a, 3); }), {x});
  check_grad(one([](const array& a) { return topk(a, 3, 1); }), {x});
}

TEST(IndexingRules, ArgSortAndArgPartitionHaveZeroDerivatives) {
  array x = f64({3, 4}, 34);
  for (array out : {argsort(x, 1), argpartition(x, 1, 0)}) {
    auto& p = out.primitive();
    auto g = p.vjp({x}, {zeros_like(out)}, {0}, {out});
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(g[0].dtype(), float64);
    expect_close(g[0], std::vector<double>(12, 0.0), {3, 4});
    auto t = p.jvp({x}, {ones_like(x)}, {0});
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].dtype(), uint32);
    expect_close(t[0], std::vector<double>(12, 0.0), {3, 4});
  }
  // Through the drivers: integer results carry no derivative.
  auto f = one([](const array& a) { return astype(argsort(a, 1), float64); });
  auto [outs, tangents] = jvp(f, {x}, {ones_like(x)});
  expect_close(tangents[0], std::vector<double>(12, 0.0), {3, 4});
}

// The rules' own graphs are differentiable: derivatives of vjps and jvps.
TEST(IndexingRules, RulesAreDifferentiable) {
  array idx = array({2, 0, -1, 2}, int32);
  auto take_vjp = two([&](const array& x, const array& c) {
    return vjp([&](const array& a) { return take(a, idx, 0); }, x, c).second;
  });
  check_grad(take_vjp, {f64({3, 2}, 35), f64({4, 2}, 36)});
  auto along_jvp = two([&](const array& x, const array& t) {
    return jvp(
               [&](const array& a) {
                 return take_along_axis(a, reshape(idx, {1, 4}), 1);
               },
               x, t)
        .second;
  });
  check_grad(along_jvp, {f64({2, 3}, 37), f64({2, 3}, 38)});
  auto add_vjp = [&](const std::vector<array>& in) {
    auto f = [&](const std::vector<array>& p) {
      return std::vector<array>{scatter_add(p[0], idx, p[1], 0)};
    };
    return vjp(f, {in[0], in[1]}, {in[2]}).second;
  };
  check_grad(add_vjp, {f64({3, 2}, 39), f64({4, 1, 2}, 40), f64({3, 2}, 41)});
  for (int kth : {0, 2}) {
    auto part_vjp = two([kth](const array& x, const array& c) {
      return vjp([kth](const array& a) { return partition(a, kth, 1); }, x, c).second;
    });
    check_grad(part_vjp, {f64({2, 4}, 42), f64({2, 4}, 43)});
    auto part_jvp = two([kth](const array& x, const array& t) {
      return jvp([kth](const array& a) { return partition(a, kth, 0); }, x, t).second;
    });
    check_grad(part_jvp, {f64({4, 2}, 44), f64({4, 2}, 45)});
  }
}

// ---------------------------------------------------------------------------------------------
// vmap

TEST(IndexingRules, TakeVmap) {
  auto f = two([](const array& a, const array& i) { return take(a, i, 1); });
  array x = f64({3, 4, 5}, 40);
  array idx = random_indices({3, 2, 3}, -5, 4, 41);
  check_vmap(f, {x, take(idx, 0, 0)}, {0, -1});
  check_vmap(f, {take(x, 0, 0), idx}, {-1, 0});
  check_vmap(f, {x, idx}, {0, 0});
  check_vmap(f, {moveaxis(x, 0, 2), moveaxis(idx, 0, 1)}, {2, 1}, {1});
  check_vmap(f, {moveaxis(x, 0, 1), take(idx, 1, 0)}, {1, -1}, {2});
  auto flat = two([](const array& a, const array& i) { return take(a, i); });
  check_vmap(flat, {x, idx}, {0, 0}, {1});
}

TEST(IndexingRules, GatherVmap) {
  // Slices (1, 2, 2) of a (3, 4, 5) slice at (i0, 0, i1).
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{gather(in[0], {in[1], in[2]}, {0, 2}, {1, 2, 2})};
  };
  array x = f64({2, 3, 4, 5}, 42);
  array i0 = random_indices({2, 3}, -3, 2, 43);
  array i1 = array({-2, 1}, {2, 1}, int32);  // broadcasts against i0; slices of 2 fit
  array x0 = take(x, 1, 0), i00 = take(i0, 1, 0), i10 = take(i1, 0, 0);
  check_vmap(f, {x, i00, i10}, {0, -1, -1});
  check_vmap(f, {x0, i0, i10}, {-1, 0, -1});
  check_vmap(f, {x0, i00, moveaxis(i1, 0, 1)}, {-1, -1, 1});
  check_vmap(f, {x, i0, i10}, {0, 0, -1}, {2});
  check_vmap(f, {moveaxis(x, 0, 3), moveaxis(i0, 0, 1), i1}, {3, 1, 0}, {1});
  // No index arrays at all: a fixed slice.
  auto corner = one([](const array& a) { return gather(a, {}, {}, {2, 1, 3}); });
  check_vmap(corner, {moveaxis(x, 0, 1)}, {1}, {2});
}

TEST(IndexingRules, TakeAlongAxisVmap) {
  auto f = two([](const array& a, const array& i) { return take_along_axis(a, i, 1); });
  array x = f64({2, 3, 4}, 45);
  array idx = random_indices({2, 3, 5}, -4, 3, 46);
  check_vmap(f, {x, take(idx, 0, 0)}, {0, -1});
  check_vmap(f, {take(x, 1, 0), idx}, {-1, 0});
  check_vmap(f, {moveaxis(x, 0, 2), moveaxis(idx, 0, 1)}, {2, 1}, {2});
  // Indices broadcast along axis 0 of each slice.
  array row = random_indices({2, 1, 5}, -4, 3, 47);
  check_vmap(f, {x, row}, {0, 0}, {1});
}

// f(a, indices, updates) for a scatter along axis 0 of each slice.
ArrayFn scatter_fn(ScatterReduce r) {
  return [r](const std::vector<array>& in) {
    const array& a = in[0];
    switch (r) {
      case ScatterReduce::None:
        return std::vector<array>{scatter(a, in[1], in[2], 0)};
      case ScatterReduce::Sum:
        return std::vector<array>{scatter_add(a, in[1], in[2], 0)};
      case ScatterReduce::Prod:
        return std::vector<array>{scatter_prod(a, in[1], in[2], 0)};
      case ScatterReduce::Max:
        return std::vector<array>{scatter_max(a, in[1], in[2], 0)};
      default:
        return std::vector<array>{scatter_min(a, in[1], in[2], 0)};
    }
  };
}

TEST(IndexingRules, ScatterVmap) {
  // Slices: a (5, 3), indices (2,), updates (2, 2, 3) (slices of 2 rows). Batch of 3.
  array a = f64({3, 5, 3}, 50);
  array idx = array({0, 3, -2, 1, 2, 2}, {3, 2}, int32);  // the last batch repeats a row
  array u = f64({3, 2, 2, 3}, 51);
  array a0 = take(a, 0, 0), idx0 = take(idx, 2, 0), u0 = take(u, 1, 0);
  for (auto r : {ScatterReduce::None, ScatterReduce::Sum, ScatterReduce::Prod, ScatterReduce::Max,
                 ScatterReduce::Min}) {
    auto f = scatter_fn(r);
    check_vmap(f, {a, idx0, u0}, {0, -1, -1});
    check_vmap(f, {a0, idx0, u}, {-1, -1, 0});
    check_vmap(f, {a0, idx, u0}, {-1, 0, -1});
    check_vmap(f, {a, idx, u}, {0, 0, 0});
    check_vmap(f, {moveaxis(a, 0, 1), idx0, moveaxis(u, 0, 3)}, {1, -1, 3}, {1});
    check_vmap(f, {moveaxis(a, 0, 2), transpose(idx), moveaxis(u, 0, 2)}, {2, 1, 2}, {2});
    check_vmap(f, {a0, transpose(idx), moveaxis(u, 0, 1)}, {-1, 1, 1});
  }
}

TEST(IndexingRules, ScatterSeveralAxesVmap) {
  // a (4, 5), indices (3,) on both axes, updates (3, 1, 2).
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{scatter_add(in[0], {in[1], in[2]}, in[3], {0, 1})};
  };
  array a = f64({2, 4, 5}, 52);
  array i0 = random_indices({2, 3}, -4, 3, 53);
  array i1 = random_indices({2, 3}, -5, -2, 54);  // slices of 2 fit
  array u = f64({2, 3, 1, 2}, 55);
  check_vmap(f, {a, take(i0, 0, 0), i1, take(u, 1, 0)}, {0, -1, 0, -1});
  check_vmap(f, {take(a, 0, 0), i0, take(i1, 1, 0), moveaxis(u, 0, 2)}, {-1, 0, -1, 2}, {1});
  check_vmap(f, {a, take(i0, 1, 0), take(i1, 1, 0), u}, {0, -1, -1, 0});
}

TEST(IndexingRules, ScatterAxisVmap) {
  array a = f64({3, 4, 5}, 56);
  array idx = random_indices({3, 4, 2}, -5, 4, 57);
  array v = f64({3, 4, 2}, 58);
  for (bool add : {false, true}) {
    auto f = [add](const std::vector<array>& in) {
      return std::vector<array>{add ? scatter_add_axis(in[0], in[1], in[2], 1)
                                    : put_along_axis(in[0], in[1], in[2], 1)};
    };
    array a0 = take(a, 0, 0), idx0 = take(idx, 1, 0), v0 = take(v, 2, 0);
    check_vmap(f, {a, idx0, v0}, {0, -1, -1});
    check_vmap(f, {a0, idx, v0}, {-1, 0, -1});
    check_vmap(f, {a0, idx0, v}, {-1, -1, 0});
    check_vmap(f, {moveaxis(a, 0, 2), moveaxis(idx, 0, 1), v}, {2, 1, 0}, {1});
    // Values broadcast inside each slice.
    check_vmap(f, {a, idx, f64({3, 1, 2}, 59)}, {0, 0, 0}, {2});
  }
}

TEST(IndexingRules, SortVmap) {
  array x = f64({3, 4, 5}, 60);
  for (int in_axis : {0, 1, 2}) {
    for (int axis : {0, 1}) {
      check_vmap(one([axis](const array& a) { return sort(a, axis); }), {x}, {in_axis});
      check_vmap(one([axis](const array& a) { return argsort(a, axis); }), {x}, {in_axis}, {1});
      check_vmap(one([axis](const array& a) { return partition(a, 2, axis); }), {x}, {in_axis},
                 {2});
      check_vmap(one([axis](const array& a) { return argpartition(a, -1, axis); }), {x}, {in_axis});
    }
  }
  check_vmap(one([](const array& a) { return sort(a); }), {x}, {1}, {1});
}

// vmap through the rules' own graphs: per-example gradients.
TEST(IndexingRules, VmapOfVjp) {
  array idx = array({2, 0, 2}, int32);
  auto take_vjp = two([&](const array& x, const array& c) {
    return vjp([&](const array& a) { return take(a, idx, 0); }, x, c).second;
  });
  check_vmap(take_vjp, {f64({4, 3, 2}, 61), f64({4, 3, 2}, 62)}, {0, 0});
  check_vmap(take_vjp, {f64({3, 2}, 61), f64({3, 2, 4}, 62)}, {-1, 2}, {1});
  auto sort_vjp = two([](const array& x, const array& c) {
    return vjp([](const array& a) { return sort(a, 0); }, x, c).second;
  });
  check_vmap(sort_vjp, {f64({5, 4}, 63), f64({4, 5}, 64)}, {1, 0});
  auto scatter_vjp = [&](const std::vector<array>& in) {
    auto f = [&](const std::vector<array>& p) {
      return std::vector<array>{scatter(p[0], idx, p[1], 0)};
    };
    return vjp(f, {in[0], in[1]}, {in[2]}).second;
  };
  check_vmap(scatter_vjp, {f64({2, 4, 2}, 65), f64({2, 3, 1, 2}, 66), f64({2, 4, 2}, 67)},
             {0, 0, 0});
  // Per-example gradients through the reducing scatters (mapped indices too).
  auto reduce_grad = [](ScatterReduce r) {
    return [r](const std::vector<array>& in) {
      auto loss = [&](const std::vector<array>& p) {
        return sum(multiply(scatter_fn(r)({p[0], in[1], p[1]})[0], in[3]));
      };
      return grad(loss, std::vector<int>{0, 1})({in[0], in[2]});
    };
  };
  array idx3 = array({0, 3, 3, 1, 2, 2}, {3, 2}, int32);
  for (auto r : {ScatterReduce::Prod, ScatterReduce::Max, ScatterReduce::Min}) {
    auto g = reduce_grad(r);
    check_vmap(g, {f64({3, 5, 2}, 68), idx3, f64({3, 2, 1, 2}, 69), f64({3, 5, 2}, 70)},
               {0, 0, 0, 0});
    check_vmap(g, {f64({5, 2}, 68), take(idx3, 0, 0), f64({2, 1, 2, 3}, 69), f64({5, 2, 3}, 70)},
               {-1, -1, 3, 2}, {1, 0});
  }
}

// ---------------------------------------------------------------------------------------------
// RandomBits

TEST(IndexingRules, RandomBitsVmapOverKeys) {
  array keys = random::split(random::key(5), 4);  // (4, 2)
  auto bits = one([](const array& k) { return random::bits({3, 2}, 4, k); });
  check_vmap(bits, {keys}, {0}, {}, 0);
  check_vmap(bits, {transpose(keys)}, {1}, {2}, 0);
  auto bytes = one([](const array& k) { return random::bits({5}, 1, k); });
  check_vmap(bytes, {keys}, {0}, {1}, 0);
  auto split2 = one([](const array& k) { return random::split(k, 3); });
  check_vmap(split2, {keys}, {0}, {1}, 0);
  // Nested batches of keys.
  array grid = reshape(random::split(random::key(6), 6), {2, 3, 2});
  auto inner = [&](const array& k) { return vmap(bits, {0})({k})[0]; };
  auto nested = vmap(one(inner), {1}, {0})({grid})[0];
  ASSERT_EQ(nested.shape(), (Shape{3, 2, 3, 2}));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      auto expected = random::bits({3, 2}, 4, take(take(grid, j, 0), i, 0));
      expect_close(take(take(nested, i, 0), j, 0), to_vector(expected), {3, 2}, 0, 0);
    }
  }
}

TEST(IndexingRules, RandomBitsVmapRejectsTheWordAxis) {
  array keys = random::split(random::key(5), 3);  // (3, 2)
  auto bits = one([](const array& k) { return random::bits({2}, 4, k); });
  EXPECT_THROW(vmap(bits, {1})({keys}), std::invalid_argument);
  // The rule itself, given keys whose unmapped shape does not end in 2.
  array out = random::bits({2}, 4, random::key(1));
  EXPECT_THROW(out.primitive().vmap({zeros({3, 4}, uint32)}, {0}), std::invalid_argument);
}

TEST(IndexingRules, RandomSamplersVmapOverKeys) {
  array keys = random::split(random::key(7), 5);
  check_vmap(one([](const array& k) { return random::uniform({2, 3}, float32, k); }), {keys}, {0});
  check_vmap(one([](const array& k) { return random::normal({4}, float64, k); }), {keys}, {0}, {1});
  check_vmap(one([](const array& k) { return random::uniform(-2.0, 3.0, {3}, float32, k); }),
             {transpose(keys)}, {1});
}

TEST(IndexingRules, RandomBitsHasZeroDerivatives) {
  array key = random::key(3);
  array out = random::bits({2, 3}, 2, key);
  auto& p = out.primitive();
  auto t = p.jvp({key}, {zeros_like(key)}, {0});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].dtype(), uint16);
  expect_close(t[0], std::vector<double>(6, 0.0), {2, 3});
  auto g = p.vjp({key}, {zeros_like(out)}, {0}, {out});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].dtype(), uint32);
  expect_close(g[0], {0, 0}, {2});
}

}  // namespace
}  // namespace mlx::core::test
