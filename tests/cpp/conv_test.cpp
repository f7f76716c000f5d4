// Convolution: values on hand-checked cases, derivatives (input and weight, through every
// geometry parameter) against central differences in float64, and vmap against loops.
#include "mlx/primitives/conv.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "mlx/mlx.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

array rand64(const Shape& shape, uint32_t seed) {
  return random_array(shape, float64, -1, 1, seed);
}

TEST(Conv, OneDimensionalByHand) {
  // x = [1, 2, 3, 4], w = [1, 0, -1]: correlation [1 - 3, 2 - 4] = [-2, -2].
  array x = reshape(array({1.f, 2.f, 3.f, 4.f}), {1, 4, 1});
  array w = reshape(array({1.f, 0.f, -1.f}), {1, 3, 1});
  expect_close(conv1d(x, w), {-2, -2}, {1, 2, 1});
  // Flipped (a true convolution): [3 - 1, 4 - 2].
  expect_close(conv_general(x, w, {1}, {0}, {0}, {1}, {1}, 1, true), {2, 2}, {1, 2, 1});
  // Padding 1, stride 2: windows at -1 and 1: [0 - 2, 2 - 4].
  expect_close(conv1d(x, w, 2, 1), {-2, -2}, {1, 2, 1});
  // Input dilation 2: [1 0 2 0 3 0 4] -> [1-2, 0-0, 2-3, 0, 3-4] = [-1, 0, -1, 0, -1].
  expect_close(conv_general(x, w, {1}, {0}, {0}, {1}, {2}), {-1, 0, -1, 0, -1}, {1, 5, 1});
  EXPECT_EQ(convolve(array({1.f, 2.f, 3.f}), array({0.f, 1.f, 0.5f})).shape(), Shape{5});
  expect_close(convolve(array({1.f, 2.f, 3.f}), array({0.f, 1.f, 0.5f})), {0, 1, 2.5, 4, 1.5}, {5});
}

struct GradCase {
  Shape x, w;
  std::vector<int> stride, lo, hi, kdil, idil;
  int groups;
  bool flip;
};

const std::vector<GradCase> kCases = {
    {{2, 7, 3}, {2, 3, 3}, {1}, {0}, {0}, {1}, {1}, 1, false},
    {{1, 9, 4}, {4, 3, 2}, {2}, {1}, {2}, {2}, {1}, 2, false},
    {{1, 5, 2}, {3, 2, 2}, {1}, {1}, {1}, {1}, {2}, 1, true},
    {{1, 5, 6, 2}, {2, 3, 2, 2}, {2, 1}, {1, 0}, {1, 1}, {1, 2}, {1, 1}, 1, false},
    {{1, 5, 5, 3}, {3, 3, 3, 1}, {1, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 3, false},  // depthwise
    {{2, 4, 5, 6}, {3, 2, 3, 2}, {1, 1}, {1, 0}, {0, 1}, {1, 1}, {1, 1}, 3, false},  // Og = 1
    {{2, 4, 4, 4}, {2, 1, 1, 4}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 1, false},  // pointwise
    {{1, 3, 4, 3, 2},
     {2, 2, 2, 2, 2},
     {1, 2, 1},
     {0, 1, 1},
     {1, 0, 0},
     {1, 1, 1},
     {2, 1, 1},
     1,
     true},
    {{1, 7, 2}, {2, 3, 2}, {1}, {-1}, {2}, {1}, {1}, 1, false},  // negative padding
    // Strided without dilations (the input derivative by stride phases).
    {{1, 10, 2}, {3, 2, 2}, {3}, {1}, {1}, {1}, {1}, 1, false},
    {{2, 9, 8, 2}, {2, 3, 3, 2}, {2, 3}, {2, 0}, {1, 2}, {1, 1}, {1, 1}, 1, true},
    {{1, 7, 6, 4}, {4, 3, 3, 2}, {2, 2}, {1, 1}, {0, 1}, {1, 1}, {1, 1}, 2, false},
};

TEST(ConvRules, GradAgainstFiniteDifferences) {
  uint32_t seed = 1;
  for (const auto& c : kCases) {
    SCOPED_TRACE("input " + to_string(c.x) + " weight " + to_string(c.w));
    auto f = [&](const std::vector<array>& in) {
      return std::vector<array>{
          conv_general(in[0], in[1], c.stride, c.lo, c.hi, c.kdil, c.idil, c.groups, c.flip)};
    };
    check_grad(f, {rand64(c.x, seed), rand64(c.w, seed + 1)});
    seed += 2;
  }
}

TEST(ConvRules, SecondOrder) {
  // The weight derivative of the input derivative.
  auto f = [](const std::vector<array>& in) {
    array w = in[1];
    auto d = grad([w](const array& x) { return sum(square(conv2d(x, w, {2, 1}, {1, 0}))); });
    return std::vector<array>{d(in[0])};
  };
  GradCheckOptions opt;
  opt.argnums = {1};
  check_grad(f, {rand64({1, 5, 4, 2}, 3), rand64({2, 3, 2, 2}, 4)}, opt);
}

TEST(ConvRules, Vmap) {
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{conv2d(in[0], in[1], {1, 2}, {1, 1}, {1, 1}, 2)};
  };
  array x = rand64({3, 2, 5, 6, 4}, 5), w = rand64({3, 4, 3, 3, 2}, 6);
  check_vmap(f, {x, w}, {0, 0});
  check_vmap(f, {x, take(w, 0, 0)}, {0, -1});
  check_vmap(f, {take(x, 0, 0), w}, {-1, 0});
  check_vmap(f, {moveaxis(x, 0, 3), moveaxis(w, 0, 2)}, {3, 2});
}

// ConvWeightGrad built directly on every device and dtype against the CPU's derivative as a
// convolution (the rules' form there for all but depthwise geometries): the CPU's im2col
// product, and on a GPU cuDNN's filter pass or the im2col products.
TEST(ConvWeightGrad, MatchesTheConvolutionForm) {
  std::vector<Device> devices{Device::cpu};
  if (is_available(Device::gpu)) {
    devices.push_back(Device::gpu);
  }
  uint32_t seed = 40;
  for (const auto& c : kCases) {
    if (std::any_of(c.idil.begin(), c.idil.end(), [](int d) { return d != 1; })) {
      continue;  // the rules keep a transposed convolution's weight derivative a convolution
    }
    SCOPED_TRACE("input " + to_string(c.x) + " weight " + to_string(c.w));
    array x = rand64(c.x, seed), w = rand64(c.w, seed + 1);
    seed += 2;
    Stream cpu = default_stream(Device::cpu);
    auto conv = [&](const array& weight) {
      return conv_general(x, weight, c.stride, c.lo, c.hi, c.kdil, c.idil, c.groups, c.flip, cpu);
    };
    array g = rand64(conv(w).shape(), seed++);
    array expected = vjp([&](const array& weight) { return conv(weight); }, w, g).second;
    ConvParams p{c.stride, c.lo, c.hi, c.kdil, c.idil, c.groups, c.flip};
    Shape kernel(c.w.begin() + 1, c.w.end() - 1);
    for (Device d : devices) {
      for (Dtype dt : {float64, float32}) {
        SCOPED_TRACE(std::string(d == Device::cpu ? "cpu " : "gpu ") + dtype_name(dt));
        array in = astype(x, dt), cot = astype(g, dt);
        array dw(conv_weight_grad_shape(p, kernel, in.shape(), cot.shape()), dt,
                 std::make_shared<ConvWeightGrad>(default_stream(d), p, kernel), {in, cot});
        EXPECT_EQ(dw.shape(), w.shape());
        double tol = dt == float64 ? 1e-10 : 1e-4;
        expect_close(dw, to_vector(expected), w.shape(), tol, tol);
      }
    }
  }
}

TEST(Conv, Errors) {
  array x = zeros({1, 5, 5, 4}, float32);
  EXPECT_THROW(conv2d(x, zeros({2, 3, 3, 3}, float32)), std::invalid_argument);
  EXPECT_THROW(conv2d(x, zeros({2, 3, 3, 2}, float32), {1, 1}, {0, 0}, {1, 1}, 3),
               std::invalid_argument);
  EXPECT_THROW(conv2d(x, zeros({2, 9, 3, 4}, float32)), std::invalid_argument);
  EXPECT_THROW(conv_general(x, zeros({2, 3, 3, 4}, float32), {0}), std::invalid_argument);
  EXPECT_THROW(conv1d(zeros({1, 5, 2}, int32), zeros({1, 3, 2}, int32)), std::invalid_argument);
  try {
    conv2d(x, zeros({2, 3, 3, 2}, float32), {1, 1}, {0, 0}, {1, 1}, 3);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input channels (4) must be divisible by groups (3)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mlx::core::test
