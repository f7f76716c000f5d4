// In-place 16-bit products for few rows. With B stored transposed (a Linear's weight, W (N, K)
// used as W.T) each output is a dot product of a row of A with a row of W: the 16-bit row is
// widened eight lanes at a time (bfloat16 by a shift, float16 by F16C) and multiplied with up
// to four rows of A at once, so W is read once per call (one row of A: four rows of W at once).
// With B row-major each block of 16
// columns accumulates A[m, k] * B[k, :] over k. Accumulation is in float32; float32 B takes
// the transposed path with plain loads.
#include "mlx/backend/cpu/half_matvec.h"

#include <algorithm>
#include <type_traits>

#include "mlx/backend/cpu/simd/vec.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

namespace {

using simd::VecF;

// Eight 16-bit values widened to float32: by a shift (bfloat16) or F16C (float16) where the
// target has them, else one at a time.
template <typename H>
inline VecF load8(const H* p) {
#ifdef MLX_SIMD_AVX2
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<H, bfloat16_t>) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
#ifdef __F16C__
  else {
    return _mm256_cvtph_ps(h);
  }
#endif
#endif
  float t[8];
  for (int i = 0; i < 8; ++i) {
    t[i] = static_cast<float>(p[i]);
  }
  return simd::load(t);
}

inline VecF load8(const float* p) { return simd::load(p); }

inline void finish(float* c, float v, float alpha, float beta) {
  *c = beta == 0.f ? alpha * v : alpha * v + beta * *c;
}

// out[r * J + j] = row r of A (R rows, lda apart) dotted with row j of the 16-bit W (J rows,
// ldw apart), each of length K. Up to four rows of A share one row of W (W is read once per
// call); one row of A takes four rows of W at once, the decode step's product, where they keep
// four streams of W in flight and eight multiply-add chains (one row at a time, one stream
// and two chains bounded a 4096 x 4096 bfloat16 product to about 1 ms on 2 Zen 4 cores). Every
// output is summed the same way, so its bits do not depend on R or J.
template <int R, int J, typename H>
void dots(const float* a, int64_t lda, const H* w, int64_t ldw, int64_t K, float* out) {
  VecF acc0[R][J], acc1[R][J];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < J; ++j) {
      acc0[r][j] = VecF(0.f);
      acc1[r][j] = VecF(0.f);
    }
  }
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    for (int j = 0; j < J; ++j) {
      VecF w0 = load8(w + j * ldw + k), w1 = load8(w + j * ldw + k + 8);
      for (int r = 0; r < R; ++r) {
        acc0[r][j] = simd::fma(simd::load(a + r * lda + k), w0, acc0[r][j]);
        acc1[r][j] = simd::fma(simd::load(a + r * lda + k + 8), w1, acc1[r][j]);
      }
    }
  }
  if (k + 8 <= K) {
    for (int j = 0; j < J; ++j) {
      VecF w0 = load8(w + j * ldw + k);
      for (int r = 0; r < R; ++r) {
        acc0[r][j] = simd::fma(simd::load(a + r * lda + k), w0, acc0[r][j]);
      }
    }
    k += 8;
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < J; ++j) {
      float s = simd::hsum(acc0[r][j] + acc1[r][j]);
      for (int64_t t = k; t < K; ++t) {
        s += a[r * lda + t] * static_cast<float>(w[j * ldw + t]);
      }
      out[r * J + j] = s;
    }
  }
}

// f<R>(first) for the rows [0, M) in chunks of up to four (rows of A, or of W).
template <typename F>
void by_row_chunks(int64_t M, F&& f) {
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    switch (std::min<int64_t>(4, M - m0)) {
      case 1:
        f.template operator()<1>(m0);
        break;
      case 2:
        f.template operator()<2>(m0);
        break;
      case 3:
        f.template operator()<3>(m0);
        break;
      default:
        f.template operator()<4>(m0);
    }
  }
}

// Rows of W shorter than this are read one at a time: four short rows read together measured
// three times slower out of cache (32000 x 1024 bfloat16: 1.45 -> 4.2 ms), their streams a
// few lines apart.
constexpr int64_t kFourStreamsMinRowBytes = 8192;

template <typename H>
void transposed(int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda,
                const H* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / std::max<int64_t>(K * 2, 1));
  parallel_for(N, grain, [&](int64_t n0, int64_t n1) {
    if (M == 1 && K * static_cast<int64_t>(sizeof(H)) >= kFourStreamsMinRowBytes) {
      // Rows of W four at a time.
      by_row_chunks(n1 - n0, [&]<int J>(int64_t j0) {
        float out[J];
        dots<1, J>(a, 0, b + (n0 + j0) * ldb, ldb, K, out);
        for (int j = 0; j < J; ++j) {
          finish(c + n0 + j0 + j, out[j], alpha, beta);
        }
      });
      return;
    }
    for (int64_t n = n0; n < n1; ++n) {
      const H* w = b + n * ldb;
      by_row_chunks(M, [&]<int R>(int64_t m0) {
        float out[R];
        dots<R, 1>(a + m0 * lda, lda, w, 0, K, out);
        for (int r = 0; r < R; ++r) {
          finish(c + (m0 + r) * ldc + n, out[r], alpha, beta);
        }
      });
    }
  });
}

template <typename H>
void row_major(int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda,
               const H* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  constexpr int64_t kCols = 16;
  const int64_t blocks = (N + kCols - 1) / kCols;
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / std::max<int64_t>(K * 2 * kCols, 1));
  parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t j = blk * kCols;
      if (j + kCols <= N) {
        by_row_chunks(M, [&]<int R>(int64_t m0) {
          VecF acc0[R], acc1[R];
          for (int r = 0; r < R; ++r) {
            acc0[r] = VecF(0.f);
            acc1[r] = VecF(0.f);
          }
          for (int64_t k = 0; k < K; ++k) {
            VecF b0v = load8(b + k * ldb + j), b1v = load8(b + k * ldb + j + 8);
            for (int r = 0; r < R; ++r) {
              VecF av(a[(m0 + r) * lda + k]);
              acc0[r] = simd::fma(av, b0v, acc0[r]);
              acc1[r] = simd::fma(av, b1v, acc1[r]);
            }
          }
          for (int r = 0; r < R; ++r) {
            float out[kCols];
            simd::store(out, acc0[r]);
            simd::store(out + 8, acc1[r]);
            for (int64_t t = 0; t < kCols; ++t) {
              finish(c + (m0 + r) * ldc + j + t, out[t], alpha, beta);
            }
          }
        });
        continue;
      }
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t n = j; n < N; ++n) {
          float s = 0.f;
          for (int64_t k = 0; k < K; ++k) {
            s += a[m * lda + k] * static_cast<float>(b[k * ldb + n]);
          }
          finish(c + m * ldc + n, s, alpha, beta);
        }
      }
    }
  });
}

template <typename H>
void run(int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda, const H* b,
         bool trans_b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (trans_b) {
    transposed(M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    row_major(M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

}  // namespace

void half_matvec(int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda,
                 const float16_t* b, bool trans_b, int64_t ldb, float beta, float* c, int64_t ldc) {
  run(M, N, K, alpha, a, lda, b, trans_b, ldb, beta, c, ldc);
}

void half_matvec(int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda,
                 const bfloat16_t* b, bool trans_b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  run(M, N, K, alpha, a, lda, b, trans_b, ldb, beta, c, ldc);
}

void small_rows_matvec(int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  transposed(M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace mlx::core::cpu
