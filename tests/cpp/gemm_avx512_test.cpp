// The own AVX-512 GEMM called directly (every shape reaches the micro-kernel and the edge
// masks, which matmul's policy might route elsewhere), against a float64 reference.
#include "mlx/backend/cpu/gemm_avx512.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "mlx/backend/cpu/gemm_bf16.h"

namespace {

using mlx::core::cpu::own_gemm;

struct Case {
  bool ta, tb;
  int64_t M, N, K, pad;  // pad: extra elements on every leading dimension
  float alpha, beta;
};

void check(const Case& t) {
  std::mt19937 rng(static_cast<unsigned>(t.M * 131 + t.N * 17 + t.K + t.ta * 7 + t.tb * 3));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t lda = (t.ta ? t.M : t.K) + t.pad, ldb = (t.tb ? t.K : t.N) + t.pad,
                ldc = t.N + t.pad;
  std::vector<float> a((t.ta ? t.K : t.M) * lda + 1), b((t.tb ? t.N : t.K) * ldb + 1),
      c(t.M * ldc + 1);
  for (auto* v : {&a, &b, &c}) {
    for (auto& x : *v) {
      x = dist(rng);
    }
  }
  std::vector<float> c0 = c;
  own_gemm(t.ta, t.tb, t.M, t.N, t.K, t.alpha, a.data(), lda, b.data(), ldb, t.beta, c.data(), ldc);
  for (int64_t i = 0; i < t.M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      float got = c[i * ldc + j];
      if (j >= t.N) {  // padding between rows stays untouched
        ASSERT_EQ(got, c0[i * ldc + j]) << "padding written at " << i << "," << j;
        continue;
      }
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < t.K; ++k) {
        double x = a[t.ta ? k * lda + i : i * lda + k], y = b[t.tb ? j * ldb + k : k * ldb + j];
        sum += x * y;
        mag += std::abs(x * y);
      }
      double want = t.alpha * sum + (t.beta == 0 ? 0.0 : t.beta * c0[i * ldc + j]);
      double tol = 1e-5 * (std::abs(t.alpha) * mag + std::abs(t.beta) + 1);
      ASSERT_NEAR(got, want, tol) << "M=" << t.M << " N=" << t.N << " K=" << t.K << " ta=" << t.ta
                                  << " tb=" << t.tb << " at " << i << "," << j;
    }
  }
}

class OwnGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mlx::core::cpu::own_gemm_supported()) {
      GTEST_SKIP() << "CPU without AVX-512";
    }
  }
};

TEST_F(OwnGemm, ShapesAndTransposes) {
  const int64_t sizes[] = {1, 2, 7, 15, 16, 17, 31, 33, 64, 127};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int64_t m : sizes) {
        for (int64_t n : sizes) {
          check({ta, tb, m, n, m == n ? 255 : 33, (m + n) % 3, 1.0f, 0.0f});
        }
      }
    }
  }
}

TEST_F(OwnGemm, CacheBlockEdges) {
  // Past kMC rows, kKC depth and kNC columns, with threads splitting rows or columns.
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      check({ta, tb, 513, 255, 257, 1, 1.0f, 0.0f});
      check({ta, tb, 3, 4097, 300, 0, 1.0f, 0.0f});
      check({ta, tb, 800, 40, 513, 5, 1.0f, 0.0f});
    }
  }
}

TEST_F(OwnGemm, FewRowsTimesTransposedB) {
  // skinny_gemm (at most 96 rows, B transposed): every count of rows left for the last 6-row
  // tile, columns past the last group of 4, K past its 512-deep blocks with a masked tail.
  for (int64_t m : {1, 2, 5, 6, 7, 13, 48, 95, 96}) {
    check({false, true, m, 4 * m % 9 + 1, 1100, 1, 1.0f, 0.0f});
    check({false, true, m, 37, 515, 0, 0.5f, 2.0f});
  }
  check({false, true, 16, 4099, 64, 3, 1.0f, 0.0f});
}

TEST_F(OwnGemm, AlphaBeta) {
  check({false, false, 33, 47, 300, 2, 0.5f, 2.0f});
  check({true, true, 130, 17, 9, 0, -1.5f, 1.0f});
  check({false, true, 5, 5, 5, 0, 0.0f, 0.25f});
}

TEST_F(OwnGemm, EmptyDimensions) {
  std::vector<float> c(6, 3.0f), a(1), b(1);
  own_gemm(false, false, 2, 3, 0, 1.0f, a.data(), 1, b.data(), 3, 0.5f, c.data(), 3);
  for (float x : c) {
    EXPECT_EQ(x, 1.5f);
  }
  own_gemm(false, false, 2, 3, 0, 1.0f, a.data(), 1, b.data(), 3, 0.0f, c.data(), 3);
  for (float x : c) {
    EXPECT_EQ(x, 0.0f);
  }
  own_gemm(false, false, 0, 3, 4, 1.0f, a.data(), 4, b.data(), 3, 0.0f, c.data(), 3);
  own_gemm(false, false, 2, 0, 4, 1.0f, a.data(), 4, b.data(), 1, 0.0f, c.data(), 1);
}

TEST_F(OwnGemm, NanInfPropagateAndBetaZeroIgnoresC) {
  const int64_t n = 40;
  std::vector<float> a(n * n, 1.0f), b(n * n, 1.0f), c(n * n, NAN);
  a[3 * n + 5] = NAN;       // row 3 of the product
  b[7 * n + 9] = INFINITY;  // column 9 (row 7 of A is finite)
  own_gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float x = c[i * n + j];
      if (i == 3) {
        EXPECT_TRUE(std::isnan(x)) << i << "," << j;
      } else if (j == 9) {
        EXPECT_EQ(x, INFINITY) << i << "," << j;
      } else {
        EXPECT_EQ(x, static_cast<float>(n)) << i << "," << j;
      }
    }
  }
}

// MLX_CPU_GEMM forces either GEMM for every shape (where the CPU runs ours), float32 and
// bfloat16 alike; unset, the per-CPU policy decides. Runs on any CPU.
TEST(GemmPolicy, ForcedByEnvironment) {
  using mlx::core::cpu::bf16_gemm_supported;
  using mlx::core::cpu::own_gemm_supported;
  using mlx::core::cpu::use_bf16_gemm;
  using mlx::core::cpu::use_own_gemm;
  const char* saved = std::getenv("MLX_CPU_GEMM");
  const std::string before = saved ? saved : "";
  const int64_t shapes[][3] = {{16, 4096, 4096}, {256, 256, 256}, {4096, 16, 1024}, {2, 3, 4}};
  setenv("MLX_CPU_GEMM", "own", 1);
  for (const auto& s : shapes) {
    for (bool tb : {false, true}) {
      EXPECT_EQ(use_own_gemm(s[0], s[1], s[2], false, tb), own_gemm_supported());
    }
  }
  EXPECT_EQ(use_bf16_gemm(), bf16_gemm_supported());
  setenv("MLX_CPU_GEMM", "blas", 1);
  for (const auto& s : shapes) {
    for (bool tb : {false, true}) {
      EXPECT_FALSE(use_own_gemm(s[0], s[1], s[2], false, tb));
    }
  }
  EXPECT_FALSE(use_bf16_gemm());
  unsetenv("MLX_CPU_GEMM");
  EXPECT_EQ(use_bf16_gemm(), bf16_gemm_supported());
  if (saved) {
    setenv("MLX_CPU_GEMM", before.c_str(), 1);
  }
}

}  // namespace
