// Convolution: values on hand-checked cases, derivatives (input and weight, through every
// geometry parameter) against central differences in float64, and vmap against loops.
#include "mlx/primitives/conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "mlx/mlx.h"
#include "mlx/runtime/kernel_counter.h"
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

// Depthwise convolutions on a GPU, where they run their own kernels (backend/cuda/
// conv_depthwise.h), against the CPU: the forward convolution and both derivatives (vjp) for
// channel multipliers 1 to 4 and the transposed form (groups of 2 input channels and one
// output), every float dtype, strides, kernel and input dilation, asymmetric and negative
// padding, flips, 1-D to 3-D, a kernel whose taps are staged in chunks; the paths counted.
TEST(Conv, DepthwiseOnTheGpuMatchesTheCpu) {
  if (!is_available(Device::gpu)) {
    GTEST_SKIP() << "no GPU";
  }
  if (const char* v = std::getenv("MLX_CUDA_CONV"); v && std::string(v) == "cudnn") {
    GTEST_SKIP() << "MLX_CUDA_CONV=cudnn hands depthwise convolutions to cuDNN";
  }
  const std::vector<GradCase> cases = {
      {{3, 7, 5, 13}, {13, 3, 3, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 13, false},
      {{1, 7, 5, 3}, {6, 3, 3, 1}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 3, false},
      {{2, 9, 8, 16}, {16, 3, 3, 1}, {1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 1}, 16, true},
      {{2, 8, 9, 6}, {12, 3, 3, 1}, {1, 2}, {-1, 1}, {1, -1}, {1, 1}, {1, 1}, 6, false},
      {{2, 20, 5}, {15, 4, 1}, {2}, {2}, {1}, {1}, {1}, 5, false},
      {{1, 5, 6, 7, 8},
       {32, 3, 2, 3, 1},
       {1, 2, 1},
       {1, 0, 1},
       {1, 1, 1},
       {1, 1, 1},
       {1, 1, 1},
       8,
       false},
      {{2, 6, 7, 10}, {5, 3, 3, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 5, false},
      {{1, 4, 5, 8}, {8, 3, 3, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {2, 2}, 8, true},
      {{1, 9, 10, 256}, {256, 7, 7, 1}, {1, 1}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, 256, false},
      {{1, 1, 1, 24}, {48, 3, 3, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 24, false},
  };
  Stream cpu = default_stream(Device::cpu), gpu = default_stream(Device::gpu);
  uint32_t seed = 70;
  for (const auto& c : cases) {
    const bool transposed = std::any_of(c.idil.begin(), c.idil.end(), [](int d) { return d != 1; });
    for (Dtype dt : {float32, float16, bfloat16, float64}) {
      SCOPED_TRACE("input " + to_string(c.x) + " weight " + to_string(c.w) + " " + dtype_name(dt));
      array x = random_array(c.x, dt, -1, 1, seed), w = random_array(c.w, dt, -1, 1, seed + 1);
      auto conv = [&](Stream s) {
        return [&, s](const std::vector<array>& in) {
          return std::vector<array>{conv_general(in[0], in[1], c.stride, c.lo, c.hi, c.kdil, c.idil,
                                                 c.groups, c.flip, s)};
        };
      };
      array y = conv(cpu)({x, w})[0];
      array cot = random_array(y.shape(), dt, -1, 1, seed + 2);
      auto [cpu_out, cpu_grads] = vjp(conv(cpu), {x, w}, {cot});
      core::detail::kernel_counts(true);
      core::detail::set_kernel_counting(true);
      auto [gpu_out, gpu_grads] = vjp(conv(gpu), {x, w}, {cot});
      eval(gpu_out[0], gpu_grads[0], gpu_grads[1]);
      core::detail::set_kernel_counting(false);
      std::map<std::string, int64_t> paths;
      for (auto& [name, k] : core::detail::kernel_counts(true)) {
        paths[name] = k.count;
      }
      const double tol = dt == float64 ? 1e-10 : dt == float32 ? 1e-4 : dt == float16 ? 2e-2 : 8e-2;
      expect_close(gpu_out[0], to_vector(cpu_out[0]), y.shape(), tol, tol);
      expect_close(gpu_grads[0], to_vector(cpu_grads[0]), x.shape(), tol, tol);
      expect_close(gpu_grads[1], to_vector(cpu_grads[1]), w.shape(), tol * 4, tol * 4);
      // The forward convolution and its input derivative; a transposed convolution's weight
      // derivative is a convolution too, which may take another path.
      EXPECT_GE(paths["Convolution:depthwise"], 2);
      if (!transposed) {
        EXPECT_EQ(paths["Convolution:cudnn"] + paths["Convolution:im2col"], 0);
        EXPECT_EQ(paths["ConvWeightGrad:depthwise"], c.w.back() == 1 ? 1 : 0);
      }
    }
    seed += 3;
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
