// Shared helpers for the C++ tests: float64 references, random inputs, comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mlx/mlx.h"
#include "mlx/primitives/primitive.h"

namespace mlx::core::test {

// Evaluates `a` and returns its elements in row-major order as doubles (any dtype, any
// layout; complex arrays give their real parts).
inline std::vector<double> to_vector(const array& a) {
  array c = contiguous(astype(a, float64));
  eval(c);
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.size());
}

// An array of `dtype` holding `values` (row-major) with `shape`.
inline array from_vector(const std::vector<double>& values, const Shape& shape,
                         Dtype dtype = float32) {
  return astype(array(values.data(), shape, float64), dtype);
}

// Uniform random doubles in [lo, hi), deterministic per seed.
inline std::vector<double> random_values(size_t n, double lo = -1.0, double hi = 1.0,
                                         uint32_t seed = 0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) {
    x = dist(gen);
  }
  return v;
}

inline array random_array(const Shape& shape, Dtype dtype = float32, double lo = -1.0,
                          double hi = 1.0, uint32_t seed = 0) {
  return from_vector(random_values(shape_size(shape), lo, hi, seed), shape, dtype);
}

// Default tolerances by dtype for results computed in that dtype.
inline double default_rtol(Dtype t) {
  if (t == float16)
    return 2e-3;
  if (t == bfloat16)
    return 1.6e-2;
  if (t == float64)
    return 1e-12;
  return 1e-5;
}

// Checks shape and every element against a float64 reference (NaNs must match NaNs).
inline void expect_close(const array& actual, const std::vector<double>& expected,
                         const Shape& shape, double rtol = -1, double atol = -1) {
  ASSERT_EQ(actual.shape(), shape);
  if (rtol < 0)
    rtol = default_rtol(actual.dtype());
  if (atol < 0)
    atol = rtol;
  auto got = to_vector(actual);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at flat index " << i;
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(got[i], expected[i]) << "at flat index " << i;
    } else {
      EXPECT_NEAR(got[i], expected[i], atol + rtol * std::abs(expected[i]))
          << "at flat index " << i;
    }
  }
}

inline void expect_close(const array& actual, const std::vector<double>& expected, double rtol = -1,
                         double atol = -1) {
  expect_close(actual, expected, actual.shape(), rtol, atol);
}

inline constexpr Dtype kAllDtypes[] = {bool_,   uint8,   uint16,   uint32,   uint64,
                                       int8,    int16,   int32,    int64,    float16,
                                       float32, float64, bfloat16, complex64};
inline constexpr Dtype kFloatDtypes[] = {float16, bfloat16, float32, float64};

// A primitive whose kernel always fails, to check that errors surface from eval and workers.
class Failing : public UnaryPrimitive {
 public:
  using UnaryPrimitive::UnaryPrimitive;
  void eval_cpu(const std::vector<array>&, array&) override {
    throw std::runtime_error("[Failing] kernel error");
  }
  void eval_gpu(const std::vector<array>& in, array& out) override { eval_cpu(in, out); }
  const char* name() const override { return "Failing"; }
};

}  // namespace mlx::core::test
