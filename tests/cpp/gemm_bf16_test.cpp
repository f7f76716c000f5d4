// The AVX512-BF16 GEMM called directly, on operands of any strides, against a float64
// reference of the same bfloat16 values: every shape reaches the pair packing (odd K), the
// edge masks, the K slices and the K split, whatever matmul's policy would pick. Skipped on
// CPUs without AVX512-BF16 (the float32 fallback is tested through matmul in Python). The
// skinny kernel (few rows of A times W.T, W read in place) is checked the same way.
#include "mlx/backend/cpu/gemm_bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

using mlx::core::bfloat16_t;
using mlx::core::cpu::bf16_gemm;
using mlx::core::cpu::bf16_skinny_gemm;

// op(A) (M x K) at a[i * a_sr + k * a_sc], op(B) (K x N) at b[k * b_sr + j * b_sc].
struct Case {
  bool ta, tb;
  int64_t M, N, K;
  int64_t step;  // >1: every row / column of the stored matrices is `step` apart (strided views)
  float alpha, beta;
  bool skinny = false;  // bf16_skinny_gemm (A row-major, B transposed, step 1) for bf16_gemm
};

void check(const Case& t) {
  std::mt19937 rng(static_cast<unsigned>(t.M * 131 + t.N * 17 + t.K + t.ta * 7 + t.tb * 3));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  // Stored A is M x K (or K x M when ta) with columns `step` apart and rows padded.
  const int64_t a_rows = t.ta ? t.K : t.M, a_cols = t.ta ? t.M : t.K;
  const int64_t b_rows = t.tb ? t.N : t.K, b_cols = t.tb ? t.K : t.N;
  const int64_t a_ld = a_cols * t.step + 3, b_ld = b_cols * t.step + 5, ldc = t.N + 2;
  std::vector<bfloat16_t> a(a_rows * a_ld + 1), b(b_rows * b_ld + 1);
  for (auto& x : a) {
    x = bfloat16_t(dist(rng));
  }
  for (auto& x : b) {
    x = bfloat16_t(dist(rng));
  }
  std::vector<float> c(t.M * ldc + 1);
  for (auto& x : c) {
    x = dist(rng);
  }
  const std::vector<float> c0 = c;
  const int64_t a_sr = t.ta ? t.step : a_ld, a_sc = t.ta ? a_ld : t.step;
  const int64_t b_sr = t.tb ? t.step : b_ld, b_sc = t.tb ? b_ld : t.step;
  if (t.skinny) {
    ASSERT_TRUE(!t.ta && t.tb && t.step == 1);
    bf16_skinny_gemm(t.M, t.N, t.K, t.alpha, a.data(), a_sr, b.data(), b_sc, t.beta, c.data(), ldc);
  } else {
    bf16_gemm(t.M, t.N, t.K, t.alpha, a.data(), a_sr, a_sc, b.data(), b_sr, b_sc, t.beta, c.data(),
              ldc);
  }
  for (int64_t i = 0; i < t.M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= t.N) {
        ASSERT_EQ(got, c0[i * ldc + j]) << "padding written at " << i << "," << j;
        continue;
      }
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < t.K; ++k) {
        const double x = static_cast<float>(a[i * a_sr + k * a_sc]);
        const double y = static_cast<float>(b[k * b_sr + j * b_sc]);
        sum += x * y;
        mag += std::abs(x * y);
      }
      const double want = t.alpha * sum + (t.beta == 0 ? 0.0 : t.beta * c0[i * ldc + j]);
      // Exact products, float32 sums: the float32 GEMM's tolerance.
      const double tol = 1e-5 * (std::abs(t.alpha) * mag + std::abs(t.beta) + 1);
      ASSERT_NEAR(got, want, tol) << "M=" << t.M << " N=" << t.N << " K=" << t.K << " ta=" << t.ta
                                  << " tb=" << t.tb << " step=" << t.step << " skinny=" << t.skinny
                                  << " at " << i << "," << j;
    }
  }
}

class Bf16Gemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mlx::core::cpu::bf16_gemm_supported()) {
      GTEST_SKIP() << "CPU without AVX512-BF16";
    }
  }
};

TEST_F(Bf16Gemm, OddShapesAndTransposes) {
  // K odd (a zero pads the last pair), 1, and around the 16-word transposes and 32-lane
  // permutes of the packing; M and N around the 12 x 32 tile.
  const int64_t sizes[] = {1, 2, 11, 12, 13, 31, 32, 33, 47};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int64_t m : sizes) {
        for (int64_t k : {1, 2, 3, 31, 32, 33, 65}) {
          check({ta, tb, m, sizes[(m + k) % 9], k, 1, 1.0f, 0.0f});
        }
      }
    }
  }
}

TEST_F(Bf16Gemm, StridedOperands) {
  // Neither operand contiguous along either dimension: the one-value-at-a-time packing.
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      check({ta, tb, 29, 41, 37, 2, 1.0f, 0.0f});
      check({ta, tb, 7, 3, 64, 3, 1.0f, 0.0f});
    }
  }
}

TEST_F(Bf16Gemm, CacheBlocksAndKSplit) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      check({ta, tb, 401, 75, 1031, 1, 1.0f, 0.0f});  // K slices (odd last), row blocks
      check({ta, tb, 30, 33, 2049, 1, 1.0f, 0.5f});   // the K split over the threads
      check({ta, tb, 5, 4100, 40, 1, 1.0f, 0.0f});    // past a column slice
    }
  }
}

TEST_F(Bf16Gemm, AlphaBeta) {
  check({false, false, 33, 47, 300, 1, 0.5f, 2.0f});
  check({true, true, 130, 17, 9, 1, -1.5f, 1.0f});
  check({false, true, 5, 5, 5, 1, 0.0f, 0.25f});
}

TEST_F(Bf16Gemm, EmptyDimensions) {
  std::vector<float> c(6, 3.0f);
  std::vector<bfloat16_t> a(1), b(1);
  bf16_gemm(2, 3, 0, 1.0f, a.data(), 1, 1, b.data(), 3, 1, 0.5f, c.data(), 3);
  for (float x : c) {
    EXPECT_EQ(x, 1.5f);
  }
  bf16_gemm(2, 3, 0, 1.0f, a.data(), 1, 1, b.data(), 3, 1, 0.0f, c.data(), 3);
  for (float x : c) {
    EXPECT_EQ(x, 0.0f);
  }
  bf16_gemm(0, 3, 4, 1.0f, a.data(), 4, 1, b.data(), 3, 1, 0.0f, c.data(), 3);
  bf16_gemm(2, 0, 4, 1.0f, a.data(), 4, 1, b.data(), 1, 1, 0.0f, c.data(), 1);
}

TEST_F(Bf16Gemm, SkinnyRowsAndTails) {
  // M around the 6-row tiles up to the largest (96); K odd, past a 32-value step and a
  // 1024-value block; N around the 4 rows of W per group; rows of A and W padded (lda, ldw > K).
  for (int64_t m : {1, 2, 5, 6, 7, 16, 17, 96}) {
    for (int64_t k : {1, 2, 31, 33, 1023, 2049}) {
      for (int64_t n : {1, 3, 4, 5, 13}) {
        check({false, true, m, n, k, 1, 1.0f, 0.0f, true});
      }
    }
  }
  check({false, true, 17, 9, 100, 1, 0.5f, 2.0f, true});
  check({false, true, 3, 7, 64, 1, -1.5f, 1.0f, true});
}

TEST_F(Bf16Gemm, SkinnyEmptyDimensions) {
  std::vector<float> c(6, 3.0f);
  std::vector<bfloat16_t> a(1), w(1);
  bf16_skinny_gemm(2, 3, 0, 1.0f, a.data(), 1, w.data(), 1, 0.5f, c.data(), 3);
  for (float x : c) {
    EXPECT_EQ(x, 1.5f);
  }
  bf16_skinny_gemm(0, 3, 4, 1.0f, a.data(), 4, w.data(), 4, 0.0f, c.data(), 3);
  bf16_skinny_gemm(2, 0, 4, 1.0f, a.data(), 4, w.data(), 4, 0.0f, c.data(), 1);
  for (float x : c) {
    EXPECT_EQ(x, 1.5f);
  }
}

TEST_F(Bf16Gemm, NanInfPropagate) {
  const int64_t n = 40;
  std::vector<bfloat16_t> a(n * n, bfloat16_t(1.0f)), b(n * n, bfloat16_t(1.0f));
  a[3 * n + 5] = bfloat16_t(NAN);       // row 3 of the product
  b[7 * n + 9] = bfloat16_t(INFINITY);  // column 9; 7 for the skinny kernel (b as W: its row 7)
  for (bool skinny : {false, true}) {
    std::vector<float> c(n * n, NAN);
    if (skinny) {
      bf16_skinny_gemm(n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    } else {
      bf16_gemm(n, n, n, 1.0f, a.data(), n, 1, b.data(), n, 1, 0.0f, c.data(), n);
    }
    const int64_t inf_col = skinny ? 7 : 9;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float x = c[i * n + j];
        if (i == 3) {
          EXPECT_TRUE(std::isnan(x)) << skinny << ": " << i << "," << j;
        } else if (j == inf_col) {
          EXPECT_EQ(x, INFINITY) << skinny << ": " << i << "," << j;
        } else {
          EXPECT_EQ(x, static_cast<float>(n)) << skinny << ": " << i << "," << j;
        }
      }
    }
  }
}

}  // namespace
