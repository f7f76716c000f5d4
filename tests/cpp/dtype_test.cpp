#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mlx/mlx.h"

using namespace mlx::core;

TEST(Dtype, SizesAndNames) {
  EXPECT_EQ(size_of(bool_), 1);
  EXPECT_EQ(size_of(float16), 2);
  EXPECT_EQ(size_of(bfloat16), 2);
  EXPECT_EQ(size_of(int64), 8);
  EXPECT_EQ(size_of(complex64), 8);
  EXPECT_EQ(dtype_name(bfloat16), "bfloat16");
  EXPECT_EQ(dtype_from_name("uint16"), uint16);
  EXPECT_THROW(dtype_from_name("float8"), std::invalid_argument);
}

TEST(Dtype, PromotionFollowsMLX) {
  EXPECT_EQ(promote_types(bool_, bool_), bool_);
  EXPECT_EQ(promote_types(bool_, int8), int8);
  EXPECT_EQ(promote_types(uint8, int8), int16);
  EXPECT_EQ(promote_types(uint32, int32), int64);
  EXPECT_EQ(promote_types(uint64, int64), float32);
  EXPECT_EQ(promote_types(int64, float16), float16);
  EXPECT_EQ(promote_types(float16, bfloat16), float32);
  EXPECT_EQ(promote_types(bfloat16, int32), bfloat16);
  EXPECT_EQ(promote_types(float32, float64), float64);
  EXPECT_EQ(promote_types(float64, complex64), complex64);
  // Symmetric.
  for (Dtype a : {bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16, float32,
                  float64, bfloat16, complex64}) {
    for (Dtype b : {bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16,
                    float32, float64, bfloat16, complex64}) {
      EXPECT_EQ(promote_types(a, b), promote_types(b, a)) << a << " " << b;
    }
  }
}

TEST(Dtype, Categories) {
  EXPECT_TRUE(issubdtype(float16, DtypeCategory::floating));
  EXPECT_TRUE(issubdtype(bfloat16, DtypeCategory::inexact));
  EXPECT_TRUE(issubdtype(int8, DtypeCategory::signedinteger));
  EXPECT_TRUE(issubdtype(uint64, DtypeCategory::integer));
  EXPECT_FALSE(issubdtype(uint64, DtypeCategory::signedinteger));
  EXPECT_TRUE(issubdtype(complex64, DtypeCategory::complexfloating));
  EXPECT_TRUE(issubdtype(complex64, DtypeCategory::number));
  EXPECT_FALSE(issubdtype(bool_, DtypeCategory::number));
  EXPECT_TRUE(issubdtype(bool_, DtypeCategory::generic));
  EXPECT_TRUE(issubdtype(DtypeCategory::floating, DtypeCategory::inexact));
  EXPECT_FALSE(issubdtype(DtypeCategory::inexact, DtypeCategory::floating));
}

TEST(Dtype, FinfoIinfo) {
  EXPECT_EQ(finfo(float16).max, 65504.0);
  EXPECT_EQ(finfo(float16).eps, std::ldexp(1.0, -10));
  EXPECT_EQ(finfo(bfloat16).eps, std::ldexp(1.0, -7));
  EXPECT_EQ(finfo(float32).max, std::numeric_limits<float>::max());
  EXPECT_EQ(finfo(float64).min, std::numeric_limits<double>::lowest());
  EXPECT_EQ(iinfo(int8).min, -128);
  EXPECT_EQ(iinfo(uint64).max, std::numeric_limits<uint64_t>::max());
  EXPECT_THROW(finfo{int32}, std::invalid_argument);
  EXPECT_THROW(iinfo{float32}, std::invalid_argument);
}

namespace {
// Reference conversion: exact rounding of a float to the nearest half, ties to even, done
// by scanning the neighbouring representable values.
uint16_t reference_half(float f) {
  if (std::isnan(f))
    return 0x7e00;
  double best_d = INFINITY;
  uint16_t best = 0;
  for (uint32_t b = 0; b < 0x7c00; ++b) {
    double v = static_cast<float>(float16_t::from_bits(static_cast<uint16_t>(b)));
    double d = std::abs(v - std::abs(static_cast<double>(f)));
    if (d < best_d || (d == best_d && (b & 1) == 0)) {
      best_d = d;
      best = static_cast<uint16_t>(b);
    }
  }
  // Values at or past max + half an ulp overflow to inf.
  if (std::abs(f) >= 65520.0f)
    best = 0x7c00;
  return static_cast<uint16_t>(best | (std::signbit(f) ? 0x8000 : 0));
}
}  // namespace

TEST(Dtype, Float16RoundTripAndRounding) {
  // Every half value survives half -> float -> half.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float16_t h = float16_t::from_bits(static_cast<uint16_t>(b));
    float f = h;
    float16_t back(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(back)));
    } else {
      EXPECT_EQ(back.bits_, h.bits_) << b;
    }
  }
  // Rounding to nearest even on a sample of floats, including ties and subnormals.
  for (float f : {1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11), 65519.0f,
                  65520.0f, 1e-8f, 3e-8f, 6.0e-5f, -2.5e-6f, 0.1f, 1000.3f, -77.77f}) {
    EXPECT_EQ(float16_t(f).bits_, reference_half(f)) << f;
  }
  EXPECT_TRUE(std::isinf(static_cast<float>(float16_t(1e6f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(float16_t(NAN))));
  EXPECT_TRUE(std::isinf(static_cast<float>(float16_t(-INFINITY))));
}

TEST(Dtype, BFloat16Rounding) {
  EXPECT_EQ(bfloat16_t(1.0f).bits_, 0x3f80);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: rounds to even (1.0).
  EXPECT_EQ(bfloat16_t(1.0f + std::ldexp(1.0f, -8)).bits_, 0x3f80);
  // 1 + 3 * 2^-8 is a tie between 1+2^-7 and 1+2^-6: rounds to even (1 + 2^-6).
  EXPECT_EQ(bfloat16_t(1.0f + 3 * std::ldexp(1.0f, -8)).bits_, 0x3f82);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16_t(NAN))));
  EXPECT_TRUE(std::isinf(static_cast<float>(bfloat16_t(INFINITY))));
  EXPECT_TRUE(std::isinf(static_cast<float>(bfloat16_t(3.4e38f))));  // rounds past max
  for (uint32_t b = 0; b < 0x10000; b += 7) {
    bfloat16_t h = bfloat16_t::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (!std::isnan(f)) {
      EXPECT_EQ(bfloat16_t(f).bits_, h.bits_);
    }
  }
}

TEST(Dtype, ArrayConversionsRoundCorrectly) {
  array a({1.0f + std::ldexp(1.0f, -11), 65520.0f, NAN, -INFINITY});
  array h = astype(a, float16);
  eval(h);
  EXPECT_EQ(h.data<float16_t>()[0].bits_, 0x3c00);
  EXPECT_TRUE(std::isinf(static_cast<float>(h.data<float16_t>()[1])));
  EXPECT_TRUE(std::isnan(static_cast<float>(h.data<float16_t>()[2])));
  EXPECT_EQ(h.data<float16_t>()[3].bits_, 0xfc00);
}
