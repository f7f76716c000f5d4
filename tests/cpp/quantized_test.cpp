// Quantization: the fused product against the product with the dequantized matrix for every
// bit width, both orientations and the matrix-vector and blocked paths; its rules.
#include <gtest/gtest.h>

#include "mlx/mlx.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

TEST(Quantized, FusedProductMatchesDequantized) {
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (int group_size : {32, 64, 128}) {
      for (bool transpose : {true, false}) {
        for (int rows : {1, 3, 20}) {
          SCOPED_TRACE(::testing::Message()
                       << bits << " bits, group " << group_size
                       << (transpose ? ", transposed, " : ", ") << rows << " rows");
          array w = random_array(transpose ? Shape{64, 256} : Shape{256, 128}, float32, -1, 1, 3);
          auto q = quantize(w, group_size, bits);
          array W = dequantize(q[0], q[1], q[2], group_size, bits);
          array x = random_array({rows, 256}, float32, -1, 1, 4);
          array y = quantized_matmul(x, q[0], q[1], q[2], transpose, group_size, bits);
          array expected = matmul(x, transpose ? swapaxes(W, 0, 1) : W);
          expect_close(y, to_vector(expected), expected.shape(), 1e-4, 1e-4);
        }
      }
    }
  }
}

TEST(Quantized, HalfInputs) {
  array w = random_array({32, 64}, float32, -1, 1, 5);
  auto q = quantize(astype(w, bfloat16), 32, 4);
  array x = astype(random_array({2, 64}, float32, -1, 1, 6), bfloat16);
  array y = quantized_matmul(x, q[0], q[1], q[2], true, 32, 4);
  EXPECT_EQ(y.dtype(), bfloat16);
  array expected =
      matmul(astype(x, float32), transpose(dequantize(q[0], q[1], q[2], 32, 4, "affine", float32)));
  expect_close(astype(y, float32), to_vector(expected), expected.shape(), 2e-2, 5e-2);
}

TEST(QuantizedRules, GradAndVmap) {
  array w = random_array({16, 64}, float32, -1, 1, 7);
  auto q = quantize(w, 32, 4);
  auto f = [&](const std::vector<array>& in) {
    return std::vector<array>{quantized_matmul(in[0], q[0], q[1], q[2], true, 32, 4)};
  };
  GradCheckOptions opt;
  opt.rtol = 5e-2;
  check_grad(f, {random_array({3, 64}, float32, -1, 1, 8)}, opt);
  check_vmap(f, {random_array({2, 3, 64}, float32, -1, 1, 9)}, {1});
}

}  // namespace
}  // namespace mlx::core::test
