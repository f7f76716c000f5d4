// The own float32 GEMM (gemm_avx512.h). Loop nest, outermost first:
//   jc: columns of C in slices of kNC          (a packed B slice lives in L3)
//   pc: the K dimension in steps of kKC        (pack B[pc, jc] once, shared by all threads)
//   tasks over the pool: a block of mc rows of C times a range of B's column panels; each
//       task packs its rows of A (mc x kc, in L2; narrow products read full row panels of A
//       in place instead, see kDirectPanels), then
//   jr: column panels of kNR                   (one kc x kNR panel of B stays in L1)
//   ir: row panels of kMR                      (micro-kernel: kMR x kNR of C in registers)
// Only the micro-kernel uses AVX-512 (function target attributes, so that nothing else in the
// library needs AVX-512 to run); packing is plain code.
#include "mlx/backend/cpu/gemm_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "mlx/backend/common/dynamic_library.h"
#include "mlx/backend/cpu/cpu_features.h"
#include "mlx/backend/cpu/skinny_dots.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

namespace {

constexpr int kMR = kGemmMR;
constexpr int kNR = kGemmNR;
// Cache blocks: a kKC x kNR panel of B is 32 KiB (L1d is 48 KiB), an mc x kKC block of A at
// most 384 KiB (L2 is 1 MiB), a kKC x kNC slice of B 4 MiB (L3 is 32 MiB, shared).
constexpr int64_t kKC = 256;
constexpr int64_t kMC = kGemmMC;
constexpr int64_t kNC = 128 * kNR;
// Below this many flops a product runs on the calling thread (waking the pool costs more).
constexpr double kMinParallelFlops = 1 << 22;
// Up to this many column panels of B (N <= 512), full row panels of A are read in place
// instead of packed. Measured on 2 Zen 4 cores (GFLOP/s, packed -> in place): 4096 x 128 x 512
// 155 -> 178, 4096 x 384 x 128 176 -> 183, 512 x 128 x 4096 (A transposed) 90 -> 150,
// 4096 x 512 x 128 185 -> 189; wider products keep packing: 2048^3 193 -> 183,
// 512 x 11008 x 4096 168 -> 149.
constexpr int64_t kDirectPanels = 16;
// Products with at most this many elements of C and at least this depth split K across the
// threads instead of rows and columns (split_k_product). 2 Zen 4 cores, GFLOP/s, rows -> K split
// (OpenBLAS beside), A transposed: 384 x 128 x 4096 166 -> 217 (172), 128 x 128 x 4096
// 139 -> 205 (164), 512 x 128 x 4096 167 -> 179 (169), 128 x 512 x 4096 162 -> 184 (182);
// neither transposed: 64 x 4096 x 4096 118 -> 136 (152).
constexpr int64_t kSplitKMaxOutput = 512 * 512;
constexpr int64_t kSplitKMinDepth = 1024;
// Up to this many rows of A times a transposed B take skinny_dots (no packing); K in blocks of
// 2 KiB per row of W.
constexpr int64_t kSkinnyRows = kSkinnyMaxRows;
constexpr int64_t kSkinnyKC = 512;

// One packed panel: kc steps of W consecutive values, value v of step k read from
// src[k * step + v * stride], zeros for v >= n. Along the matrix's rows (stride 1) the steps
// are copies; across them (step 1) a transpose.
template <int64_t W>
void pack_panel(const float* src, int64_t step, int64_t stride, int64_t n, int64_t kc, float* dst) {
  if (stride == 1) {
    for (int64_t k = 0; k < kc; ++k) {
      std::memcpy(dst + k * W, src + k * step, n * sizeof(float));
      std::fill(dst + k * W + n, dst + (k + 1) * W, 0.0f);
    }
    return;
  }
  for (int64_t v = 0; v < W; ++v) {
    const float* s = src + v * stride;
    for (int64_t k = 0; k < kc; ++k) {
      dst[k * W + v] = v < n ? s[k * step] : 0.0f;
    }
  }
}

// Rows [i0, i0 + mc) and depth [p0, p0 + kc) of op(A) as ceil(mc / kMR) panels, each kc
// columns of kMR consecutive values; rows past mc are zeros.
void pack_a(bool trans, const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            float* dst) {
  for (int64_t ip = 0; ip < mc; ip += kMR, dst += kMR * kc) {
    const int64_t rows = std::min<int64_t>(kMR, mc - ip);
    const float* src = a + (trans ? p0 * lda + i0 + ip : (i0 + ip) * lda + p0);
    pack_panel<kMR>(src, trans ? lda : 1, trans ? 1 : lda, rows, kc, dst);
  }
}

// Depth [p0, p0 + kc) and the column panels [q0, q1) (of kNR columns from j0) of op(B), each
// panel kc rows of kNR consecutive values; columns past nc are zeros.
void pack_b(bool trans, const float* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
            int64_t q0, int64_t q1, float* dst) {
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t jp = j0 + q * kNR, cols = std::min<int64_t>(kNR, nc - q * kNR);
    const float* src = b + (trans ? jp * ldb + p0 : p0 * ldb + jp);
    pack_panel<kNR>(src, trans ? 1 : ldb, trans ? ldb : 1, cols, kc, dst + q * kNR * kc);
  }
}

// C[:mr, :nr] = alpha * (packed A panel @ packed B panel) + beta * C. The accumulators are
// indexed only by constants (full unrolling), so they stay in registers.
MLX_TARGET_AVX512 void micro_kernel(int64_t kc, const float* __restrict pa,
                                    const float* __restrict pb, float* c, int64_t ldc, int mr,
                                    int nr, float alpha, float beta) {
  __m512 c0[kMR], c1[kMR];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    c0[r] = _mm512_setzero_ps();
    c1[r] = _mm512_setzero_ps();
    if (r < mr) {
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 16), _MM_HINT_T0);
    }
  }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(pb);
    const __m512 b1 = _mm512_loadu_ps(pb + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
      const __m512 av = _mm512_set1_ps(pa[r]);
      c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
    }
    pa += kMR;
    pb += kNR;
  }
  store_tile(c0, c1, c, ldc, mr, nr, alpha, beta);
}

// micro_kernel for a full row panel (kMR rows) of A read in place: element (r, k) at
// a[r * lda + k], or at a[k * lda + r] when TransA. Packing A costs a transpose per element
// that only pays off when many column panels of B reuse the packed block (see kDirectPanels).
// Row-major rows are reached from four base pointers plus 0, lda and 2 lda, which x86
// addressing expresses without more registers.
template <bool TransA>
MLX_TARGET_AVX512 void micro_kernel_direct(int64_t kc, const float* __restrict a, int64_t lda,
                                           const float* __restrict pb, float* c, int64_t ldc,
                                           int nr, float alpha, float beta) {
  __m512 c0[kMR], c1[kMR];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    c0[r] = _mm512_setzero_ps();
    c1[r] = _mm512_setzero_ps();
  }
  static_assert(kMR == 12, "the row-major loads below cover 4 x 3 rows");
  const float* rows[4] = {a, a + 3 * lda, a + 6 * lda, a + 9 * lda};
  const int64_t step = TransA ? lda : 1, l1 = TransA ? 1 : lda, l2 = 2 * l1;
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(pb);
    const __m512 b1 = _mm512_loadu_ps(pb + 16);
    if (TransA) {
#pragma GCC unroll 12
      for (int r = 0; r < kMR; ++r) {
        const __m512 av = _mm512_set1_ps(rows[0][r]);
        c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
        c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
      }
    } else {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const __m512 x0 = _mm512_set1_ps(rows[q][0]);
        const __m512 x1 = _mm512_set1_ps(rows[q][l1]);
        const __m512 x2 = _mm512_set1_ps(rows[q][l2]);
        c0[3 * q] = _mm512_fmadd_ps(x0, b0, c0[3 * q]);
        c1[3 * q] = _mm512_fmadd_ps(x0, b1, c1[3 * q]);
        c0[3 * q + 1] = _mm512_fmadd_ps(x1, b0, c0[3 * q + 1]);
        c1[3 * q + 1] = _mm512_fmadd_ps(x1, b1, c1[3 * q + 1]);
        c0[3 * q + 2] = _mm512_fmadd_ps(x2, b0, c0[3 * q + 2]);
        c1[3 * q + 2] = _mm512_fmadd_ps(x2, b1, c1[3 * q + 2]);
      }
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      rows[q] += step;
    }
    pb += kNR;
  }
  store_tile(c0, c1, c, ldc, kMR, nr, alpha, beta);
}

// A 64-byte aligned pointer into a buffer of n floats plus slack.
float* aligned(float* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((v + 63) & ~uintptr_t(63));
}

// A thread's packing buffer of at least n floats, kept for the thread's later calls. Outside
// the allocator, like BLAS's own buffers, so that the memory plans and statistics see the
// same bytes whichever GEMM runs. Each pool thread keeps one for blocks of A (kMC x kKC), each
// calling thread one for slices of B (at most kKC x kNC, 4 MiB).
float* packing_buffer(std::unique_ptr<float[]>& buf, size_t& size, size_t n) {
  if (size < n) {
    buf.reset(new float[n + 16]);
    size = n;
  }
  return aligned(buf.get());
}

float* a_block() {
  thread_local std::unique_ptr<float[]> buf;
  thread_local size_t size = 0;
  return packing_buffer(buf, size, kMC * kKC);
}

float* b_slice(size_t n) {
  thread_local std::unique_ptr<float[]> buf;
  thread_local size_t size = 0;
  return packing_buffer(buf, size, n);
}

// A calling thread's buffer for the K-split partial sums, kept for its later calls.
float* partial_sums(size_t n) {
  thread_local std::unique_ptr<float[]> buf;
  thread_local size_t size = 0;
  return packing_buffer(buf, size, n);
}

// C = beta * C (the K == 0 product).
void scale_c(int64_t M, int64_t N, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.0f) {
      std::fill(row, row + N, 0.0f);
    } else {
      for (int64_t j = 0; j < N; ++j) {
        row[j] *= beta;
      }
    }
  }
}

// The blocked product on `threads` threads of the pool (1: the calling thread alone).
void blocked_gemm(int64_t threads, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                  float* c, int64_t ldc) {
  const RowBlocks blocks = split_rows(M, threads);
  const int64_t mc = blocks.rows, m_blocks = blocks.count;
  const int64_t nc_max = std::min(kNC, ceil_div(N, kNR) * kNR);
  float* pb = b_slice(std::min(kKC, K) * nc_max);
  const bool direct_a = ceil_div(N, kNR) <= kDirectPanels;

  for (int64_t j0 = 0; j0 < N; j0 += kNC) {
    const int64_t nc = std::min(kNC, N - j0), panels = ceil_div(nc, kNR);
    const int64_t n_parts = blocks.column_parts(panels, threads);
    for (int64_t p0 = 0; p0 < K; p0 += kKC) {
      const int64_t kc = std::min(kKC, K - p0);
      const float beta_k = p0 == 0 ? beta : 1.0f;
      const int64_t pack_grain = threads == 1 ? panels : 4;
      parallel_for(panels, pack_grain, [&](int64_t q0, int64_t q1) {
        pack_b(trans_b, b, ldb, p0, kc, j0, nc, q0, q1, pb);
      });
      parallel_for(threads == 1 ? 1 : m_blocks * n_parts, 1, [&](int64_t t0, int64_t t1) {
        float* pa = a_block();
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t i0 = t / n_parts * mc, rows = std::min(mc, M - i0);
          const int64_t part = t % n_parts;
          const int64_t q0 = panels * part / n_parts, q1 = panels * (part + 1) / n_parts;
          // One task when single-threaded: it covers every row block.
          for (int64_t ib = i0; ib < (threads == 1 ? M : i0 + rows); ib += mc) {
            const int64_t mb = std::min(mc, M - ib);
            // In place, only the last, partial row panel is packed.
            const int64_t packed_from = direct_a ? mb / kMR * kMR : 0;
            pack_a(trans_a, a, lda, ib + packed_from, mb - packed_from, p0, kc, pa);
            for (int64_t q = q0; q < q1; ++q) {
              const int nr = static_cast<int>(std::min<int64_t>(kNR, nc - q * kNR));
              const float* b_panel = pb + q * kNR * kc;
              for (int64_t ip = 0; ip < mb; ip += kMR) {
                const int mr = static_cast<int>(std::min<int64_t>(kMR, mb - ip));
                float* c_tile = c + (ib + ip) * ldc + j0 + q * kNR;
                if (ip < packed_from) {
                  const float* a_panel = a + (trans_a ? p0 * lda + ib + ip : (ib + ip) * lda + p0);
                  (trans_a ? micro_kernel_direct<true>
                           : micro_kernel_direct<false>)(kc, a_panel, lda, b_panel, c_tile, ldc, nr,
                                                         alpha, beta_k);
                } else {
                  micro_kernel(kc, pa + (ip - packed_from) * kc, b_panel, c_tile, ldc, mr, nr,
                               alpha, beta_k);
                }
              }
            }
          }
        }
      });
    }
  }
}

// skinny_dots' tile for float32: 16 lanes of A's rows times W's rows per step, by FMA.
struct FloatDotTile {
  template <int R>
  MLX_TARGET_AVX512 static void run(int64_t kc, const float* __restrict a, int64_t lda,
                                    const float* const* w, __m512* acc) {
    __m512 s[R][kDotRowsW];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < kDotRowsW; ++j) {
        s[r][j] = acc[r * kDotRowsW + j];
      }
    }
    for (int64_t k = 0; k < kc; k += 16) {
      const __mmask16 m = kc - k >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (kc - k)) - 1);
      __m512 wv[kDotRowsW];
#pragma GCC unroll 4
      for (int j = 0; j < kDotRowsW; ++j) {
        wv[j] = _mm512_maskz_loadu_ps(m, w[j] + k);
      }
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_maskz_loadu_ps(m, a + r * lda + k);
#pragma GCC unroll 4
        for (int j = 0; j < kDotRowsW; ++j) {
          s[r][j] = _mm512_fmadd_ps(av, wv[j], s[r][j]);
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

bool own_gemm_supported() { return has_avx512(); }

// Whether the BLAS that matmul.cpp calls runs OpenBLAS's AVX-512 kernels. OpenBLAS names its
// kernel set (openblas_get_corename), looked up in the OpenBLAS this process already loaded
// (RTLD_NOLOAD: a Python extension's private dependency too), so any BLAS links.
bool blas_runs_avx512() {
  static const bool yes = [] {
    DynamicLibrary blas(nullptr, {"libopenblas.so.0", "libblas.so.3"}, RTLD_LAZY | RTLD_NOLOAD);
    using CoreName = const char* (*)();
    CoreName core_name = nullptr;
    blas.sym(core_name, "openblas_get_corename");
    if (core_name == nullptr) {
      return false;
    }
    std::string core(core_name());
    for (char& c : core) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return core == "skylakex" || core == "cooperlake" || core == "sapphirerapids";
  }();
  return yes;
}

// The AVX-512 policy below was measured on an Intel Xeon and an AMD Zen 4, whose OpenBLAS runs
// the same kernels at different speeds relative to ours.
bool cpu_is_intel() {
  static const bool yes = __builtin_cpu_is("intel");
  return yes;
}

std::optional<bool> forced_own_gemm() {
  const char* env = std::getenv("MLX_CPU_GEMM");
  const std::string_view v(env ? env : "");
  return v == "own" ? std::optional(true) : v == "blas" ? std::optional(false) : std::nullopt;
}

RowBlocks split_rows(int64_t M, int64_t threads) {
  int64_t count = ceil_div(M, kGemmMC);
  const int64_t unit = count > threads * kChunksPerThread ? threads * kChunksPerThread : threads;
  count = count >= threads ? ceil_div(count, unit) * unit : std::min(threads, ceil_div(M, kGemmMR));
  const int64_t rows = ceil_div(ceil_div(M, count), kGemmMR) * kGemmMR;
  return RowBlocks{rows, ceil_div(M, rows)};
}

bool use_own_gemm(int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b) {
  if (!own_gemm_supported()) {
    return false;
  }
  if (const std::optional<bool> forced = forced_own_gemm()) {
    return *forced;
  }
  // Measured own / OpenBLAS (Haswell kernels) speed on 2 Zen 5 cores (benchmarks/bench_gemm.py
  // for the large shapes, the same timing for these):
  //   M x N x K            B     own/BLAS     M x N x K           B     own/BLAS
  //   17 x 4096 x 4096     B.T   0.56         17 x 4096 x 4096    B     1.11
  //   64 x 4096 x 4096     B.T   0.89         64 x 4096 x 4096    B     1.44
  //   128 x 4096 x 4096    B.T   1.19         4096 x 1024 x 16    B.T   1.34
  //   4096 x 16 x 1024     B.T   0.67         4096 x 64 x 1024    B.T   0.85
  //   32^3 0.98, 48^3 0.99, 64^3 1.05, 96^3 1.48, 128^3 1.92; 256^3 .. 4096^3 about 1.8-1.9
  // A transposed A (the weight gradient dy.T @ x), 2 threads, quiet machine:
  //   128 x 128 x 4096 0.57, 512 x 128 x 4096 0.83, 128 x 512 x 4096 1.26 (noisy),
  //   512 x 512 x 4096 1.37, 1024^3 1.28
  // A transposed operand is packed by a scalar transpose that costs more than the products
  // when it is reused by few rows or columns of C.
  // With the K split (kSplitKMaxOutput), a transposed A of 128 rows or more is ahead too.
  const bool split_k = splits_k(M, N, K);
  if (blas_runs_avx512() && !cpu_is_intel()) {
    // OpenBLAS 0.3.21's Cooperlake kernels on 2 Zen 4 cores (EPYC, family 25 model 17),
    // GFLOP/s own / OpenBLAS (a scratch loop of A @ B, both forced, interleaved, medians):
    //   64^3 69 / 84, 128^3 133 / 151, 192^3 169 / 176, 256^3 195 / 197, 384^3 208 / 204,
    //   512^3 211 / 200, 1024^3 205 / 210; B.T: 512^3 206 / 199, 1024^3 203 / 207
    //   4096 x 384 x 128 B.T 215 / 205, 4096 x 128 x 512 215 / 201, 4096 x 1024 x 16 B.T
    //   176 / 129, 4096 x 16 x 1024 B.T 98 / 143, 4096 x 64 x 1024 B.T 198 / 182
    //   A.T: 512 x 128 x 4096 216 / 197, 128 x 128 x 4096 210 / 189, 1024^3 205 / 208
    //   B.T with rows of A read against all of B: 64 / 128 / 256 x 4096 x 4096 90 / 137,
    //   127 / 166, 152 / 189, 512 x 4096 x 4096 173 / 197
    //   skinny_dots / OpenBLAS, M x 4096 x 4096 B.T: M = 2 44 / 11, 4 70 / 21, 8 113 / 39,
    //   16 146 / 67, 32 160 / 99, 48 156 / 117, 64 151 / 136, 96 161 / 156, 128 162 / 167;
    //   shallow ones lose (its lane sums cost per output): 24 x 256 x 256 123 / 133,
    //   48 x 384 x 128 90 / 114, 24 x 256 x 512 139 / 121, 48 x 512 x 512 156 / 138
    // so own takes the shallow products from 256^3 up and the weight gradients' split K, and
    // skinny_dots the few rows times B.T at least 512 deep.
    if (trans_a) {
      return split_k && M >= 128 && N >= 128;
    }
    return (trans_b && M <= kSkinnyRows && K >= 512) || (K <= 512 && M * N >= 256 * 256);
  }
  if (blas_runs_avx512()) {
    // OpenBLAS with its AVX-512 kernels (SkylakeX on 2 cores of a Xeon with AVX-512 and AMX),
    // own / OpenBLAS: the shallow products of training ahead (4096 x 384 x 128 B.T 1.06,
    // 4096 x 128 x 512 1.12, 512^3 1.09), the weight gradients' split K even (512 x 128 x 4096
    // A.T 1.02), everything deeper or smaller behind (256^3 0.87, 1024^3 .. 4096^3 0.85-0.92,
    // 16 / 512 x 4096 x 4096 B.T 0.33 / 0.76, 512 x 11008 x 4096 B.T 0.76).
    return trans_a ? split_k && M >= 128 && N >= 128 : K <= 512 && M * N >= 512 * 512;
  }
  // Few rows of A times B.T at least 512 deep go to skinny_dots (no packing), which the table
  // above predates. GFLOP/s skinny_dots / OpenBLAS (Haswell kernels), M x 4096 x 4096 B.T, 2 Zen 5
  // cores, four interleaved runs each: M = 2 30-39 / 18-23, 4 53-71 / 41-49, 8 84-108 / 67-75,
  // 16 144-162 / 100-110, 32 171-215 / 139-141, 64 182-224 / 167-178; 96 168-220 / 186-195
  // (mixed, left to OpenBLAS); from 128 rows the packed own GEMM takes them (below).
  if (trans_b && !trans_a && M <= 64 && K >= 512) {
    return true;
  }
  const int64_t min_mn = trans_a ? (split_k ? 128 : 256) : trans_b ? 128 : 16;
  return M >= min_mn && N >= min_mn && K >= 16 && M * N * K >= 64 * 64 * 64;
}

void own_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc) {
  if (M <= 0 || N <= 0) {
    return;
  }
  if (K <= 0) {
    scale_c(M, N, beta, c, ldc);
    return;
  }
  if (trans_b && !trans_a && M <= kSkinnyRows) {
    skinny_dots<FloatDotTile>(kSkinnyKC, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const double flops = 2.0 * M * N * K;
  const int64_t threads = flops < kMinParallelFlops ? 1 : num_threads();
  if (threads == 1 || !splits_k(M, N, K)) {
    blocked_gemm(threads, trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  split_k_product(threads, M, N, K, kKC, beta, c, ldc,
                  [&](int64_t k0, int64_t k1, float beta_s, float* cs, int64_t ldcs) {
                    blocked_gemm(1, trans_a, trans_b, M, N, k1 - k0, alpha,
                                 a + (trans_a ? k0 * lda : k0), lda, b + (trans_b ? k0 : k0 * ldb),
                                 ldb, beta_s, cs, ldcs);
                  });
}

bool splits_k(int64_t M, int64_t N, int64_t K) {
  return M * N <= kSplitKMaxOutput && K >= kSplitKMinDepth;
}

void split_k_product(int64_t threads, int64_t M, int64_t N, int64_t K, int64_t step, float beta,
                     float* c, int64_t ldc, const SliceProduct& product) {
  // At least `step` of depth per slice, so that the rounded slice bounds below are increasing.
  const int64_t slices = std::max<int64_t>(1, std::min(threads, K / step)), size = M * N;
  float* partial = partial_sums((slices - 1) * size);
  parallel_for(slices, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t k0 = ceil_div(K * s / slices, step) * step;
      const int64_t k1 = s + 1 == slices ? K : ceil_div(K * (s + 1) / slices, step) * step;
      if (s == 0) {
        product(k0, k1, beta, c, ldc);
      } else {
        product(k0, k1, 0.0f, partial + (s - 1) * size, N);
      }
    }
  });
  parallel_for(M, std::max<int64_t>(1, 4096 / N), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float* row = c + i * ldc;
      for (int64_t s = 1; s < slices; ++s) {
        const float* p = partial + (s - 1) * size + i * N;
        for (int64_t j = 0; j < N; ++j) {
          row[j] += p[j];
        }
      }
    }
  });
}

}  // namespace mlx::core::cpu
