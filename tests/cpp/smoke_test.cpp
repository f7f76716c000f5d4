#include <gtest/gtest.h>

#include "mlx/mlx.h"

using namespace mlx::core;

TEST(Smoke, AddAndEval) {
  array a({1.0f, 2.0f, 3.0f});
  array b({10.0f, 20.0f, 30.0f});
  array c = a + b;
  eval(c);
  EXPECT_EQ(c.shape(), Shape({3}));
  EXPECT_FLOAT_EQ(c.data<float>()[2], 33.0f);
}
