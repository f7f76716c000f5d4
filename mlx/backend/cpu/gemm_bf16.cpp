// The bfloat16 GEMM (gemm_bf16.h). The loop nest is own_gemm's (gemm_avx512.cpp): columns of C
// in slices of kNC, K in slices of kKC whose packed B is shared by the pool's tasks, each task
// packing its block of A's rows, then column panels of kNR and row panels of kMR around the
// micro-kernel. The packed panels hold K in pairs: one 32-bit word is the two bfloat16 values
// of k = 2p, 2p + 1 (a zero pads an odd K), so that vdpbf16ps multiplies a broadcast word of A
// with 16 words of B and adds both products into 16 float32 accumulators.
#include "mlx/backend/cpu/gemm_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "mlx/backend/cpu/skinny_dots.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

// pack_pairs (gemm_bf16.h): lanes contiguous along K (s_k == 1: A row-major, B transposed) are a
// transpose of 32-bit words, 16 x 16 at a time in registers; lanes adjacent to each other
// (s_v == 1) pair two rows of K by a 16-bit permute; other strides and the tails go one value at
// a time.
template <int W>
MLX_TARGET_AVX512 void pack_pairs(const uint16_t* src, int64_t s_v, int64_t s_k, int64_t n,
                                  int64_t kc, uint16_t* dst) {
  const int64_t steps = ceil_div(kc, 2);
  int64_t p0 = 0;  // steps packed by the vector loops
  if (s_k == 1) {
    for (; p0 + 16 <= kc / 2; p0 += 16) {
      for (int v0 = 0; v0 < W; v0 += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; ++i) {
          r[i] = v0 + i < n ? _mm512_loadu_ps(src + (v0 + i) * s_v + 2 * p0) : _mm512_setzero_ps();
        }
        transpose16(r);
        const __mmask16 m = W - v0 >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (W - v0)) - 1);
        for (int j = 0; j < 16; ++j) {
          _mm512_mask_storeu_ps(dst + ((p0 + j) * W + v0) * 2, m, r[j]);
        }
      }
    }
  } else if (s_v == 1) {
    // Word i of lo: lane i of the first row, then of the second; hi: lanes 16 + i.
    alignas(64) static constexpr uint16_t lo_idx[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                        37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                        11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    const __m512i lo = _mm512_load_si512(lo_idx);
    const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    for (; p0 < steps; ++p0) {
      const uint16_t* r0 = src + 2 * p0 * s_k;
      const bool two = 2 * p0 + 1 < kc;
      uint16_t* d = dst + p0 * W * 2;
      for (int v0 = 0; v0 < W; v0 += 32) {
        const int64_t cnt = std::clamp<int64_t>(n - v0, 0, 32);
        const __mmask32 m = cnt == 32 ? ~__mmask32(0) : (__mmask32(1) << cnt) - 1;
        const __m512i x0 = _mm512_maskz_loadu_epi16(m, r0 + v0);
        const __m512i x1 =
            two ? _mm512_maskz_loadu_epi16(m, r0 + s_k + v0) : _mm512_setzero_si512();
        const int words = std::min(32, W - v0);
        const auto store_mask = [](int w) {
          return w >= 16 ? ~__mmask32(0) : (__mmask32(1) << (2 * w)) - 1;
        };
        _mm512_mask_storeu_epi16(d + 2 * v0, store_mask(words),
                                 _mm512_permutex2var_epi16(x0, lo, x1));
        if (words > 16) {
          _mm512_mask_storeu_epi16(d + 2 * v0 + 32, store_mask(words - 16),
                                   _mm512_permutex2var_epi16(x0, hi, x1));
        }
      }
    }
  }
  for (int64_t p = p0; p < steps; ++p) {
    const uint16_t* s0 = src + 2 * p * s_k;
    const bool two = 2 * p + 1 < kc;
    uint16_t* d = dst + p * W * 2;
    for (int64_t v = 0; v < W; ++v) {
      d[2 * v] = v < n ? s0[v * s_v] : 0;
      d[2 * v + 1] = v < n && two ? s0[v * s_v + s_k] : 0;
    }
  }
}

template void pack_pairs<kGemmNR>(const uint16_t*, int64_t, int64_t, int64_t, int64_t, uint16_t*);

namespace {

constexpr int kMR = kGemmMR;
constexpr int kNR = kGemmNR;
// The same bytes as own_gemm's blocks: a kKC x kNR panel of B is 32 KiB (L1), an mc x kKC
// block of A at most 384 KiB (L2), a kKC x kNC slice of B 4 MiB (L3). kKC is even.
constexpr int64_t kKC = 512;
constexpr int64_t kMC = kGemmMC;
constexpr int64_t kNC = 128 * kNR;
constexpr double kMinParallelFlops = 1 << 22;
constexpr int64_t kSplitKMaxRows = 256;

struct Operand {
  const uint16_t* p;
  int64_t s_r, s_c;  // strides of rows and columns
};

// C[:mr, :nr] = alpha * (packed A panel @ packed B panel) + beta * C over `steps` pairs.
MLX_TARGET_AVX512_BF16 void micro_kernel(int64_t steps, const uint16_t* __restrict pa,
                                         const uint16_t* __restrict pb, float* c, int64_t ldc,
                                         int mr, int nr, float alpha, float beta) {
  __m512 c0[kMR], c1[kMR];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    c0[r] = _mm512_setzero_ps();
    c1[r] = _mm512_setzero_ps();
  }
#pragma GCC unroll 2
  for (int64_t p = 0; p < steps; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(pb);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(pb + 32);
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
      int32_t word;
      std::memcpy(&word, pa + 2 * r, 4);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(word);
      c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
      c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
    }
    pa += 2 * kMR;
    pb += 2 * kNR;
  }
  store_tile(c0, c1, c, ldc, mr, nr, alpha, beta);
}

// A thread's packing buffer of at least n values, kept for its later calls (outside the
// allocator, as own_gemm's).
uint16_t* packing_buffer(std::unique_ptr<uint16_t[]>& buf, size_t& size, size_t n) {
  if (size < n) {
    buf.reset(new uint16_t[n + 32]);
    size = n;
  }
  auto v = reinterpret_cast<uintptr_t>(buf.get());
  return reinterpret_cast<uint16_t*>((v + 63) & ~uintptr_t(63));
}

uint16_t* a_block() {
  thread_local std::unique_ptr<uint16_t[]> buf;
  thread_local size_t size = 0;
  return packing_buffer(buf, size, kMC * kKC);
}

uint16_t* b_slice(size_t n) {
  thread_local std::unique_ptr<uint16_t[]> buf;
  thread_local size_t size = 0;
  return packing_buffer(buf, size, n);
}

// The blocked product on `threads` threads of the pool (1: the calling thread alone).
void blocked(int64_t threads, int64_t M, int64_t N, int64_t K, float alpha, const Operand& a,
             const Operand& b, float beta, float* c, int64_t ldc) {
  const RowBlocks blocks = split_rows(M, threads);  // as own_gemm's
  const int64_t mc = blocks.rows, m_blocks = blocks.count;
  const int64_t nc_max = std::min(kNC, ceil_div(N, kNR) * kNR);
  // K in even slices of at most kKC (576 = 288 + 288, not 512 + 64).
  const int64_t kc_max = ceil_div(ceil_div(K, ceil_div(K, kKC)), 2) * 2;
  uint16_t* pb = b_slice(kc_max * nc_max);

  for (int64_t j0 = 0; j0 < N; j0 += kNC) {
    const int64_t nc = std::min(kNC, N - j0), panels = ceil_div(nc, kNR);
    const int64_t n_parts = blocks.column_parts(panels, threads);
    for (int64_t p0 = 0; p0 < K; p0 += kc_max) {
      const int64_t kc = std::min(kc_max, K - p0), steps = ceil_div(kc, 2);
      const float beta_k = p0 == 0 ? beta : 1.0f;
      parallel_for(panels, threads == 1 ? panels : 4, [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q) {
          const int64_t cols = std::min<int64_t>(kNR, nc - q * kNR);
          pack_pairs<kNR>(b.p + p0 * b.s_r + (j0 + q * kNR) * b.s_c, b.s_c, b.s_r, cols, kc,
                          pb + q * steps * 2 * kNR);
        }
      });
      parallel_for(threads == 1 ? 1 : m_blocks * n_parts, 1, [&](int64_t t0, int64_t t1) {
        uint16_t* pa = a_block();
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t i0 = t / n_parts * mc, part = t % n_parts;
          const int64_t q0 = panels * part / n_parts, q1 = panels * (part + 1) / n_parts;
          // One task when single-threaded: it covers every row block.
          const int64_t i_end = threads == 1 ? M : std::min(M, i0 + mc);
          for (int64_t ib = i0; ib < i_end; ib += mc) {
            const int64_t mb = std::min(mc, M - ib);
            for (int64_t ip = 0; ip < mb; ip += kMR) {
              pack_pairs<kMR>(a.p + (ib + ip) * a.s_r + p0 * a.s_c, a.s_r, a.s_c,
                              std::min<int64_t>(kMR, mb - ip), kc, pa + ip * steps * 2);
            }
            for (int64_t q = q0; q < q1; ++q) {
              const int nr = static_cast<int>(std::min<int64_t>(kNR, nc - q * kNR));
              for (int64_t ip = 0; ip < mb; ip += kMR) {
                const int mr = static_cast<int>(std::min<int64_t>(kMR, mb - ip));
                micro_kernel(steps, pa + ip * steps * 2, pb + q * steps * 2 * kNR,
                             c + (ib + ip) * ldc + j0 + q * kNR, ldc, mr, nr, alpha, beta_k);
              }
            }
          }
        }
      });
    }
  }
}

// skinny_dots' tile for bfloat16: 32 values (16 pairs along K) of A's rows times W's rows per
// step by vdpbf16ps; the masked tail zeroes both operands past kc (an odd K included).
struct Bf16DotTile {
  template <int R>
  MLX_TARGET_AVX512_BF16 static void run(int64_t kc, const uint16_t* __restrict a, int64_t lda,
                                         const uint16_t* const* w, __m512* acc) {
    __m512 s[R][kDotRowsW];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < kDotRowsW; ++j) {
        s[r][j] = acc[r * kDotRowsW + j];
      }
    }
    for (int64_t k = 0; k < kc; k += 32) {
      const __mmask32 m = kc - k >= 32 ? ~__mmask32(0) : (__mmask32(1) << (kc - k)) - 1;
      __m512bh wv[kDotRowsW];
#pragma GCC unroll 4
      for (int j = 0; j < kDotRowsW; ++j) {
        wv[j] = (__m512bh)_mm512_maskz_loadu_epi16(m, w[j] + k);
      }
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m512bh av = (__m512bh)_mm512_maskz_loadu_epi16(m, a + r * lda + k);
#pragma GCC unroll 4
        for (int j = 0; j < kDotRowsW; ++j) {
          s[r][j] = _mm512_dpbf16_ps(s[r][j], av, wv[j]);
        }
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < kDotRowsW; ++j) {
        acc[r * kDotRowsW + j] = s[r][j];
      }
    }
  }
};

}  // namespace

bool bf16_gemm_supported() {
  static const bool ok = own_gemm_supported() && __builtin_cpu_supports("avx512bf16");
  return ok;
}

bool use_bf16_gemm() { return bf16_gemm_supported() && forced_own_gemm() != false; }

void bf16_gemm(int64_t M, int64_t N, int64_t K, float alpha, const bfloat16_t* a_, int64_t a_sr,
               int64_t a_sc, const bfloat16_t* b_, int64_t b_sr, int64_t b_sc, float beta, float* c,
               int64_t ldc) {
  if (M <= 0 || N <= 0) {
    return;
  }
  const Operand a{reinterpret_cast<const uint16_t*>(a_), a_sr, a_sc};
  const Operand b{reinterpret_cast<const uint16_t*>(b_), b_sr, b_sc};
  if (K <= 0) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
      }
    }
    return;
  }
  const int64_t threads = 2.0 * M * N * K < kMinParallelFlops ? 1 : num_threads();
  // The K split where each thread's rows would be few (2 Zen 4 cores, GFLOP/s, rows -> K
  // split: 64 x 576 x 12544 A.T 243 -> 288, 196 x 512 x 4608 B.T 320 -> 341, but
  // 784 x 256 x 2304 B.T 366 -> 308).
  if (threads == 1 || !splits_k(M, N, K) || M > kSplitKMaxRows) {
    blocked(threads, M, N, K, alpha, a, b, beta, c, ldc);
    return;
  }
  split_k_product(threads, M, N, K, kKC, beta, c, ldc,
                  [&](int64_t k0, int64_t k1, float beta_s, float* cs, int64_t ldcs) {
                    blocked(1, M, N, k1 - k0, alpha, {a.p + k0 * a.s_c, a.s_r, a.s_c},
                            {b.p + k0 * b.s_r, b.s_r, b.s_c}, beta_s, cs, ldcs);
                  });
}

void bf16_skinny_gemm(int64_t M, int64_t N, int64_t K, float alpha, const bfloat16_t* a,
                      int64_t lda, const bfloat16_t* w, int64_t ldw, float beta, float* c,
                      int64_t ldc) {
  // K in blocks of 2 KiB per row of W (float32's block in bytes).
  constexpr int64_t kc = 1024;
  skinny_dots<Bf16DotTile>(kc, M, N, K, alpha, reinterpret_cast<const uint16_t*>(a), lda,
                           reinterpret_cast<const uint16_t*>(w), ldw, beta, c, ldc);
}

}  // namespace mlx::core::cpu
