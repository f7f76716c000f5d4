// CPU matrix products. Float types go to BLAS on the inputs' own memory whenever each
// matrix is row- or column-major with a usable leading dimension; other layouts (and
// float16/bfloat16, which BLAS lacks) are copied one matrix at a time, except that few rows
// times a 16-bit matrix read that matrix in place (half_matvec.h). Integer and bool products
// use a blocked loop with wrapping (modular) arithmetic.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <limits>
#include <optional>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/matmul_epilogue_fallbacks.h"
#include "mlx/backend/common/views.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/gemm.h"
#include "mlx/backend/cpu/gemm_avx512.h"
#include "mlx/backend/cpu/gemm_bf16.h"
#include "mlx/backend/cpu/half_matvec.h"
#include "mlx/backend/cpu/scratch.h"
#include "mlx/backend/cpu/skinny_dots.h"
#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/linalg.h"
#include "mlx/primitives/reduction.h"

namespace mlx::core {

namespace {

using namespace cpu;

// A matrix as BLAS reads it: element (i, j) at i * ld + j, or at j * ld + i when `trans`.
struct BlasLayout {
  bool trans;
  int64_t ld;
};

std::optional<BlasLayout> blas_layout(int64_t rows, int64_t cols, int64_t s_r, int64_t s_c) {
  // Size-1 dimensions may carry any stride.
  if ((cols <= 1 || s_c == 1) &&
      (rows <= 1 || (s_r >= std::max<int64_t>(cols, 1) && s_r <= INT_MAX))) {
    return BlasLayout{false, rows <= 1 ? std::max<int64_t>(cols, 1) : s_r};
  }
  if ((rows <= 1 || s_r == 1) &&
      (cols <= 1 || (s_c >= std::max<int64_t>(rows, 1) && s_c <= INT_MAX))) {
    return BlasLayout{true, cols <= 1 ? std::max<int64_t>(rows, 1) : s_c};
  }
  return std::nullopt;
}

// The batch of matrix products out[i] = a[i] @ b[i] (out row-contiguous, M x N each).
struct Problem {
  int64_t M, N, K;
  int64_t a_sr, a_sc, b_sr, b_sc;
  std::vector<int64_t> a_off, b_off;  // element offset of each batch's matrices
};

Problem make_problem(const array& a, const array& b) {
  int nd = a.ndim();
  Problem p{a.shape(-2),
            b.shape(-1),
            a.shape(-1),
            a.strides()[nd - 2],
            a.strides()[nd - 1],
            b.strides()[nd - 2],
            b.strides()[nd - 1],
            {},
            {}};
  Shape batch(a.shape().begin(), a.shape().end() - 2);
  int64_t count = static_cast<int64_t>(shape_size(batch));
  p.a_off.reserve(count);
  p.b_off.reserve(count);
  std::vector<int32_t> idx(batch.size(), 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < count; ++i) {
    p.a_off.push_back(oa);
    p.b_off.push_back(ob);
    for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
      oa += a.strides()[d];
      ob += b.strides()[d];
      if (++idx[d] < batch[d]) {
        break;
      }
      oa -= batch[d] * a.strides()[d];
      ob -= batch[d] * b.strides()[d];
      idx[d] = 0;
    }
  }
  // One shared b: when a's batch and row dimensions form a single strided dimension, the
  // whole batch is one product with batch * M rows.
  bool shared_b =
      std::all_of(p.b_off.begin(), p.b_off.end(), [&](int64_t o) { return o == p.b_off[0]; });
  if (count > 1 && shared_b && count * p.M <= INT_MAX) {
    Shape rows_shape(a.shape().begin(), a.shape().end() - 1);
    Strides rows_strides(a.strides().begin(), a.strides().end() - 1);
    auto rows = collapse_dims<1>(rows_shape, {rows_strides});
    if (rows.shape.size() == 1) {
      p.a_sr = rows.strides[0][0];
      p.M *= count;
      p.a_off.resize(1);
      p.b_off.resize(1);
    }
  }
  return p;
}

// Hands out one matrix at a time in a layout BLAS (or the loop) can read: the input memory
// itself when possible, else a row-major copy converted to Acc. Consecutive requests for the
// same matrix (broadcast batches) reuse the copy.
template <typename In, typename Acc>
class MatrixSource {
 public:
  MatrixSource(const In* base, int64_t rows, int64_t cols, int64_t s_r, int64_t s_c,
               bool allow_trans)
      : base_(base), rows_(rows), cols_(cols), s_r_(s_r), s_c_(s_c) {
    auto layout = blas_layout(rows, cols, s_r, s_c);
    if (std::is_same_v<In, Acc> && layout && (allow_trans || !layout->trans)) {
      direct_ = layout;
    } else {
      scratch_.emplace(rows * cols);
    }
  }

  const Acc* get(int64_t offset, BlasLayout& layout) {
    if (direct_) {
      layout = *direct_;
      return reinterpret_cast<const Acc*>(base_ + offset);
    }
    layout = {false, std::max<int64_t>(cols_, 1)};
    Acc* dst = scratch_->data();
    if (cached_ != offset) {
      cached_ = offset;
      const In* src = base_ + offset;
      int64_t grain = std::max<int64_t>(1, kParallelBytes / (cols_ * sizeof(Acc) + 1));
      parallel_for(rows_, grain, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) {
          const In* s = src + i * s_r_;
          Acc* d = dst + i * cols_;
          if (s_c_ == 1) {
            for (int64_t j = 0; j < cols_; ++j) {
              d[j] = cast_value<Acc>(s[j]);
            }
          } else {
            for (int64_t j = 0; j < cols_; ++j) {
              d[j] = cast_value<Acc>(s[j * s_c_]);
            }
          }
        }
      });
    }
    return dst;
  }

 private:
  const In* base_;
  int64_t rows_, cols_, s_r_, s_c_;
  std::optional<BlasLayout> direct_;
  std::optional<Scratch<Acc>> scratch_;
  std::optional<int64_t> cached_;  // offset of the matrix in scratch_
};

void blas_gemm(const BlasLayout& la, const BlasLayout& lb, int M, int N, int K, float alpha,
               const float* a, const float* b, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, la.trans ? CblasTrans : CblasNoTrans,
              lb.trans ? CblasTrans : CblasNoTrans, M, N, K, alpha, a, la.ld, b, lb.ld, beta, c,
              ldc);
}
void blas_gemm(const BlasLayout& la, const BlasLayout& lb, int M, int N, int K, double alpha,
               const double* a, const double* b, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, la.trans ? CblasTrans : CblasNoTrans,
              lb.trans ? CblasTrans : CblasNoTrans, M, N, K, alpha, a, la.ld, b, lb.ld, beta, c,
              ldc);
}
void blas_gemm(const BlasLayout& la, const BlasLayout& lb, int M, int N, int K, complex64_t alpha,
               const complex64_t* a, const complex64_t* b, complex64_t beta, complex64_t* c,
               int ldc) {
  cblas_cgemm(CblasRowMajor, la.trans ? CblasTrans : CblasNoTrans,
              lb.trans ? CblasTrans : CblasNoTrans, M, N, K, &alpha, a, la.ld, b, lb.ld, &beta, c,
              ldc);
}

// Threads OpenBLAS may use for the next call (a cached global: the setter is not free).
void set_blas_threads(int n) {
#ifdef OPENBLAS_VERSION
  static std::atomic<int> current{-1};
  if (current.exchange(n) != n) {
    openblas_set_num_threads(n);
  }
#else
  (void)n;
#endif
}

// One product C = alpha A B + beta C, either one BLAS call using OpenBLAS's threads or
// single-threaded BLAS calls on a grid of C blocks spread over the pool. Measured policy:
// - On few cores (<= 4 threads) OpenBLAS's threads, which spin (sched_yield) for a while after
//   each call, take cores from the pool's threads during the elementwise work between products
//   (a fifth of the CPU in a training step on 2 cores); there the pool runs every product below
//   1 GFLOP (main job 7.5k -> 9k tokens/s).
// - On many cores OpenBLAS's shared packing wins (16 cores: 1024x784x512 takes 0.9 ms threaded,
//   3.5 ms on the grid), except for skinny products (any of M, N, K small), where its
//   threading collapses (512x1024 by 1024x10: 4 ms threaded, 0.12 ms on the grid).
template <typename T>
void gemm(const BlasLayout& la, const BlasLayout& lb, int M, int N, int K, T alpha, const T* a,
          const T* b, T beta, T* c, int ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_own_gemm(M, N, K, la.trans, lb.trans)) {
      own_gemm(la.trans, lb.trans, M, N, K, alpha, a, la.ld, b, lb.ld, beta, c, ldc);
      return;
    }
  }
  constexpr int kFewThreads = 4;
  constexpr double kFewThreadsBlasFlops = 1e9;
  constexpr int kSkinny = 64;
  constexpr double kMinFlopsPerPart = 1 << 21;
  constexpr int64_t kAlign = 16;  // block rows / columns: a multiple of the micro-kernel tiles
  const int threads = num_threads();
  const double flops = 2.0 * M * N * K;
  const int64_t row_blocks = (M + kAlign - 1) / kAlign, col_blocks = (N + kAlign - 1) / kAlign;
  const int64_t parts = std::min<int64_t>(
      {threads, static_cast<int64_t>(flops / kMinFlopsPerPart) + 1, row_blocks * col_blocks});
  const bool blas_threads =
      threads <= kFewThreads ? flops >= kFewThreadsBlasFlops : std::min({M, N, K}) >= kSkinny;
  if (blas_threads || parts <= 1) {
    set_blas_threads(blas_threads ? threads : 1);
    blas_gemm(la, lb, M, N, K, alpha, a, b, beta, c, ldc);
    return;
  }
  set_blas_threads(1);
  // A grid of pm x pn blocks: each block's call packs its slice of A and of B, so the grid
  // minimizes the packed total pn * M + pm * N (times K).
  int64_t pm = 1;
  double best = std::numeric_limits<double>::infinity();
  for (int64_t m = 1; m <= parts; ++m) {
    int64_t n = parts / m;
    if (m > row_blocks || n > col_blocks || m * n < parts * 3 / 4) {
      continue;
    }
    double packed = static_cast<double>(n) * M + static_cast<double>(m) * N;
    if (packed < best) {
      best = packed;
      pm = m;
    }
  }
  const int64_t pn = std::max<int64_t>(1, std::min(parts / pm, col_blocks));
  auto bounds = [](int64_t extent, int64_t blocks, int64_t i, int64_t n) {
    return std::pair{std::min(extent, blocks * i / n * kAlign),
                     std::min(extent, blocks * (i + 1) / n * kAlign)};
  };
  parallel_for(pm * pn, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t part = p0; part < p1; ++part) {
      auto [m0, m1] = bounds(M, row_blocks, part / pn, pm);
      auto [n0, n1] = bounds(N, col_blocks, part % pn, pn);
      if (m0 == m1 || n0 == n1) {
        continue;
      }
      const T* pa = a + (la.trans ? m0 : m0 * la.ld);
      const T* pb = b + (lb.trans ? n0 * lb.ld : n0);
      blas_gemm(la, lb, static_cast<int>(m1 - m0), static_cast<int>(n1 - n0), K, alpha, pa, pb,
                beta, c + m0 * ldc + n0, ldc);
    }
  });
}

// Where a product of float16 / bfloat16 operands accumulates C (M x N per batch) in float32:
// the output itself when it is float32 (Matmul's float32_out), else scratch that store()
// rounds into the output once. out holds c when beta != 0.
class HalfProductTarget {
 public:
  HalfProductTarget(array& out, int64_t size, float beta)
      : out_(out),
        size_(size),
        beta_(beta),
        in_place_(out.dtype() == float32),
        buf_(in_place_ ? 0 : size) {}
  // C of batch i, holding beta's c.
  float* load(size_t i) {
    if (in_place_) {
      return out_.data<float>() + i * size_;
    }
    if (beta_ != 0) {
      convert_contiguous(batch(i), out_.dtype(), buf_.data(), float32, size_);
    }
    return buf_.data();
  }
  void store(size_t i) {
    if (!in_place_) {
      convert_contiguous(buf_.data(), float32, batch(i), out_.dtype(), size_);
    }
  }

 private:
  char* batch(size_t i) { return out_.data<char>() + i * size_ * out_.itemsize(); }
  array& out_;
  int64_t size_;
  float beta_;
  bool in_place_;
  Scratch<float> buf_;
};

// bfloat16 products through bf16_gemm, on the operands' own memory whatever their strides,
// C in float32 rounded once into out (or stored as it is into a float32 out). Few rows of A times
// W.T with both read along K in place (x @ W.T in decode) take bf16_skinny_gemm instead; other
// few-row products times a matrix BLAS can read stay with half_matvec, which reads the matrix once
// without packing it.
bool bf16_products(const Problem& p, const array& a, const array& b, array& out, float alpha,
                   float beta) {
  if (!use_bf16_gemm()) {
    return false;
  }
  // bf16_skinny_gemm against half_matvec (up to 16 rows) and bf16_gemm (more), 2 Zen 4 cores,
  // ms, M x N x K: 1 x 4096 x 4096 1.23 -> 0.71, 16 x 4096 x 4096 6.9 -> 2.0,
  // 16 x 11008 x 4096 17.7 -> 5.8, 16 x 2048 x 512 0.32 -> 0.13; 32 x 4096 x 4096 6.0 -> 3.5,
  // 96 x 4096 x 4096 10.5 -> 9.9, 96 x 4096 x 11008 27.8 -> 26.6; but shallow ones lose from
  // 48 rows: 48 x 2048 x 512 0.31 -> 0.38, 96 x 512 x 1536 0.50 -> 0.54. One row stays with
  // half_matvec: with W out of cache (each product of a decode step) it read W at twice the
  // rate (58M model's 57 products 2.7 -> 6 ms, generation 210 -> 160 tokens/s), not yet known why.
  const bool skinny = p.M >= 2 && (p.M <= 32 || (p.M <= kSkinnyMaxRows && p.K >= 2048)) &&
                      (p.K <= 1 || (p.a_sc == 1 && p.b_sr == 1));
  if (!skinny && p.M <= kHalfMatvecRows && blas_layout(p.K, p.N, p.b_sr, p.b_sc)) {
    return false;
  }
  HalfProductTarget target(out, p.M * p.N, beta);
  for (size_t i = 0; i < p.a_off.size(); ++i) {
    float* c = target.load(i);
    const bfloat16_t* pa = a.data<bfloat16_t>() + p.a_off[i];
    const bfloat16_t* pb = b.data<bfloat16_t>() + p.b_off[i];
    if (skinny) {
      bf16_skinny_gemm(p.M, p.N, p.K, alpha, pa, p.a_sr, pb, p.b_sc, beta, c, p.N);
    } else {
      bf16_gemm(p.M, p.N, p.K, alpha, pa, p.a_sr, p.a_sc, pb, p.b_sr, p.b_sc, beta, c, p.N);
    }
    target.store(i);
  }
  return true;
}

// BLAS on T's own memory (float32, float64, complex64), or through float32 copies for
// float16 / bfloat16 (bf16_products first where the CPU has AVX512-BF16), whose out may be
// float32. `out` already holds c when beta != 0.
template <typename T>
void blas_products(const Problem& p, const array& a, const array& b, array& out, float alpha,
                   float beta) {
  if constexpr (std::is_same_v<T, bfloat16_t>) {
    if (bf16_products(p, a, b, out, alpha, beta)) {
      return;
    }
  }
  constexpr bool half = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
  using Acc = std::conditional_t<half, float, T>;
  MatrixSource<T, Acc> sa(a.data<T>(), p.M, p.K, p.a_sr, p.a_sc, true);
  std::optional<HalfProductTarget> target;
  if constexpr (half) {
    target.emplace(out, p.M * p.N, beta);
    // Few rows: the 16-bit matrix is read in place instead of converted whole.
    auto lb = blas_layout(p.K, p.N, p.b_sr, p.b_sc);
    if (p.M <= kHalfMatvecRows && lb) {
      for (size_t i = 0; i < p.a_off.size(); ++i) {
        BlasLayout la;
        const float* pa = sa.get(p.a_off[i], la);
        half_matvec(p.M, p.N, p.K, alpha, pa, la.ld, b.data<T>() + p.b_off[i], lb->trans, lb->ld,
                    beta, target->load(i), p.N);
        target->store(i);
      }
      return;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    // At most 16 rows of A that fit in L1 times a transposed B (x @ W.T in decode): dot
    // products over W's rows read once, 2-3x OpenBLAS's gemv here (4096 x 4096: 6.3 -> 2.8 ms);
    // more rows (and outer-product shapes) are BLAS's.
    constexpr int64_t kSmallRowsFloats = 4096;
    auto lb = blas_layout(p.K, p.N, p.b_sr, p.b_sc);
    auto la = blas_layout(p.M, p.K, p.a_sr, p.a_sc);
    if (p.M <= kHalfMatvecRows && p.M * p.K <= kSmallRowsFloats && lb && lb->trans && la &&
        !la->trans) {
      for (size_t i = 0; i < p.a_off.size(); ++i) {
        small_rows_matvec(p.M, p.N, p.K, alpha, a.data<float>() + p.a_off[i], la->ld,
                          b.data<float>() + p.b_off[i], lb->ld, beta,
                          out.data<float>() + i * p.M * p.N, p.N);
      }
      return;
    }
  }
  MatrixSource<T, Acc> sb(b.data<T>(), p.K, p.N, p.b_sr, p.b_sc, true);
  for (size_t i = 0; i < p.a_off.size(); ++i) {
    BlasLayout la, lb;
    const Acc* pa = sa.get(p.a_off[i], la);
    const Acc* pb = sb.get(p.b_off[i], lb);
    int M = static_cast<int>(p.M), N = static_cast<int>(p.N), K = static_cast<int>(p.K);
    if constexpr (half) {
      gemm(la, lb, M, N, K, alpha, pa, pb, beta, target->load(i), N);
      target->store(i);
    } else {
      gemm(la, lb, M, N, K, Acc(alpha), pa, pb, Acc(beta), out.data<T>() + i * p.M * p.N, N);
    }
  }
}

// Integer and bool products: sums of products wrap like the integer type (bool: any true
// product gives true). Tiles of output rows x columns keep their sums in a local block.
template <typename T>
void loop_products(const Problem& p, const array& a, const array& b, array& out) {
  using W = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;
  constexpr int64_t kRows = 8, kCols = 256;
  MatrixSource<T, T> sb(b.data<T>(), p.K, p.N, p.b_sr, p.b_sc, false);
  const T* a_base = a.data<T>();
  int64_t row_tiles = (p.M + kRows - 1) / kRows;
  int64_t grain = std::max<int64_t>(1, (1 << 16) / (kRows * std::max<int64_t>(p.N * p.K, 1)));
  for (size_t bi = 0; bi < p.a_off.size(); ++bi) {
    BlasLayout lb;
    const T* pb = sb.get(p.b_off[bi], lb);
    const T* pa = a_base + p.a_off[bi];
    T* pc = out.data<T>() + bi * p.M * p.N;
    parallel_for(row_tiles, grain, [&](int64_t t0, int64_t t1) {
      W acc[kRows][kCols];
      for (int64_t t = t0; t < t1; ++t) {
        int64_t i0 = t * kRows, rows = std::min(kRows, p.M - i0);
        for (int64_t j0 = 0; j0 < p.N; j0 += kCols) {
          int64_t cols = std::min(kCols, p.N - j0);
          for (int64_t r = 0; r < rows; ++r) {
            std::fill_n(acc[r], cols, W(0));
          }
          for (int64_t k = 0; k < p.K; ++k) {
            const T* brow = pb + k * lb.ld + j0;
            for (int64_t r = 0; r < rows; ++r) {
              W av = static_cast<W>(pa[(i0 + r) * p.a_sr + k * p.a_sc]);
              W* ar = acc[r];
              for (int64_t j = 0; j < cols; ++j) {
                ar[j] += av * static_cast<W>(brow[j]);
              }
            }
          }
          for (int64_t r = 0; r < rows; ++r) {
            T* crow = pc + (i0 + r) * p.N + j0;
            for (int64_t j = 0; j < cols; ++j) {
              crow[j] = static_cast<T>(acc[r][j]);
            }
          }
        }
      }
    });
  }
}

void products(const array& a, const array& b, array& out, float alpha, float beta) {
  Problem p = make_problem(a, b);
  // The operands' dtype: the output's, or float16 / bfloat16 for a float32 output.
  dispatch_all(a.dtype(), "matmul", [&]<typename T>() {
    if constexpr (std::is_integral_v<T>) {
      loop_products<T>(p, a, b, out);
    } else {
      blas_products<T>(p, a, b, out, alpha, beta);
    }
  });
}

}  // namespace

void cpu::matmul_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* a,
                      int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  gemm(BlasLayout{trans_a, lda}, BlasLayout{trans_b, ldb}, M, N, K, alpha, a, b, beta, c, ldc);
}
void cpu::matmul_gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha,
                      const double* a, int lda, const double* b, int ldb, double beta, double* c,
                      int ldc) {
  gemm(BlasLayout{trans_a, lda}, BlasLayout{trans_b, ldb}, M, N, K, alpha, a, b, beta, c, ldc);
}

void cpu::matmul_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                      const bfloat16_t* a, int lda, const bfloat16_t* b, int ldb, float beta,
                      float* c, int ldc) {
  bf16_gemm(M, N, K, alpha, a, trans_a ? 1 : lda, trans_a ? lda : 1, b, trans_b ? 1 : ldb,
            trans_b ? ldb : 1, beta, c, ldc);
}

void Matmul::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  products(inputs[0], inputs[1], out, 1.0f, 0.0f);
}

void AddMM::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& c = inputs[0];
  if (beta_ != 0 && c.is_donatable() && c.flags().row_contiguous && c.dtype() == out.dtype() &&
      c.shape() == out.shape()) {
    out.copy_shared_buffer(c);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
    if (beta_ != 0) {
      copy_strided(c, broadcast_strides(c, out.shape()), 0, out, out.strides(), 0, out.shape());
    }
  }
  if (out.size() == 0) {
    return;
  }
  products(inputs[1], inputs[2], out, alpha_, beta_);
}

void MatmulColumnSums::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  // Each output in its own dtype: the kernels write a float32 one of 16-bit operands as it is
  // accumulated, never rounded.
  Matmul(stream(), float32_output(0)).eval_cpu(inputs, outputs[0]);
  Reduce(stream(), Reduce::Sum, {0}).eval_cpu({inputs[1]}, outputs[1]);
}

// Runs a primitive of a fused step's fallback (matmul_epilogue_fallbacks.h).
constexpr auto run_on_cpu = [](UnaryPrimitive& p, const std::vector<array>& in, array& o) {
  p.eval_cpu(in, o);
};

void MatmulGeluApprox::eval_cpu(const std::vector<array>& inputs, array& out) {
  matmul_then_gelu_approx(stream(), inputs, out, run_on_cpu);
}

void MatmulGeluApproxVjp::eval_cpu(const std::vector<array>& inputs, array& out) {
  matmul_then_gelu_approx_vjp(stream(), inputs, out, run_on_cpu);
}

}  // namespace mlx::core
