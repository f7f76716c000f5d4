// Grouped products, the Hadamard transform and the gathered quantized product: results against
// loops of plain products, gradients by finite differences.
#include <gtest/gtest.h>

#include "mlx/mlx.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

TEST(GatherMM, MatchesLoopOfProducts) {
  array a = random_array({2, 3, 5}, float32, -1, 1, 1);
  array b = random_array({4, 5, 6}, float32, -1, 1, 2);
  std::vector<int32_t> li{1, 0, 1, 1, 0}, ri{3, 3, 0, 2, 3};
  array out = gather_mm(a, b, array(li.data(), {5}, int32), array(ri.data(), {5}, int32));
  std::vector<array> parts;
  for (size_t i = 0; i < li.size(); ++i) {
    parts.push_back(matmul(take(a, li[i], 0), take(b, ri[i], 0)));
  }
  array expected = stack(parts, 0);
  expect_close(out, to_vector(expected), expected.shape(), 1e-5, 1e-5);
}

TEST(GatherMM, GradAndOutOfRange) {
  array li = array({1, 0, 1}, int32), ri = array({2, 2, 0}, int32);
  auto f = [&](const std::vector<array>& in) {
    return std::vector<array>{gather_mm(in[0], in[1], li, ri)};
  };
  GradCheckOptions opt;
  opt.rtol = 5e-2;
  check_grad(
      f, {random_array({2, 3, 4}, float32, -1, 1, 3), random_array({3, 4, 2}, float32, -1, 1, 4)},
      opt);
  array bad = gather_mm(ones({2, 3, 4}), ones({3, 4, 2}), std::nullopt, array({0, 3}, int32));
  EXPECT_THROW(eval(bad), std::out_of_range);
}

TEST(SegmentedMM, MatchesSlices) {
  array a = random_array({3, 8}, float32, -1, 1, 5);
  array b = random_array({8, 2}, float32, -1, 1, 6);
  array seg = array({0, 3, 3, 8, 5, 5}, {3, 2}, int32);
  array out = segmented_mm(a, b, seg);
  array e0 = matmul(slice(a, {0, 0}, {3, 3}), slice(b, {0, 0}, {3, 2}));
  array e1 = matmul(slice(a, {0, 3}, {3, 8}), slice(b, {3, 0}, {8, 2}));
  array expected = stack({e0, e1, zeros({3, 2})}, 0);
  expect_close(out, to_vector(expected), expected.shape(), 1e-5, 1e-5);
}

TEST(Hadamard, OrthonormalAndLinear) {
  for (int n : {1, 16, 12, 40, 56}) {
    SCOPED_TRACE(n);
    // H^T H = n I, so the default (1 / sqrt(n)) transform keeps every row's norm.
    array x = random_array({3, n}, float32, -1, 1, 7);
    expect_close(sum(square(hadamard_transform(x)), -1), to_vector(sum(square(x), -1)), {3}, 1e-4,
                 1e-4);
  }
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{hadamard_transform(in[0], 0.5f)};
  };
  GradCheckOptions opt;
  opt.rtol = 5e-2;
  check_grad(f, {random_array({2, 20}, float32, -1, 1, 8)}, opt);
  EXPECT_THROW(hadamard_transform(ones({2, 6})), std::invalid_argument);
}

TEST(GatherQMM, MatchesQuantizedMatmulPerItem) {
  array w = random_array({3, 16, 64}, float32, -1, 1, 9);
  array x = random_array({4, 1, 64}, float32, -1, 1, 10);
  std::vector<int32_t> ri{2, 0, 2, 1};
  for (const char* mode : {"affine", "mxfp4", "mxfp8", "nvfp4"}) {
    SCOPED_TRACE(mode);
    auto q = quantize(w, std::nullopt, std::nullopt, mode);
    std::optional<array> biases;
    if (q.size() == 3) {
      biases = q[2];
    }
    array out = gather_qmm(x, q[0], q[1], biases, std::nullopt, array(ri.data(), {4}, int32), true,
                           std::nullopt, std::nullopt, mode);
    std::vector<array> parts;
    for (int i = 0; i < 4; ++i) {
      std::optional<array> bi;
      if (biases) {
        bi = take(*biases, ri[i], 0);
      }
      parts.push_back(quantized_matmul(take(x, i, 0), take(q[0], ri[i], 0), take(q[1], ri[i], 0),
                                       bi, true, std::nullopt, std::nullopt, mode));
    }
    array expected = stack(parts, 0);
    expect_close(out, to_vector(expected), expected.shape(), 1e-5, 1e-5);
  }
}

}  // namespace
}  // namespace mlx::core::test
