// Blocked kernels shared by the fused attention forward and backward: small matrix products
// on Acc rows (float or double) and the scores' masking.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#include "mlx/backend/cpu/fast_common.h"
#include "mlx/backend/cpu/simd/vec.h"
#include "mlx/backend/cpu/simd/vmath.h"

namespace mlx::core::fast::detail {

// The kernels' scratch rows start on cache lines: a vector load across two lines costs two
// (std::vector's allocations are 16-byte aligned). On Zen 4, causal float32 attention took
// 4-7% less time forward, 0-5% less forward and backward.
template <typename T>
struct LineAllocator {
  using value_type = T;
  LineAllocator() = default;
  template <typename U>
  LineAllocator(const LineAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64)));
  }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const LineAllocator&) const = default;
};
template <typename T>
using LineVector = std::vector<T, LineAllocator<T>>;

// S[MR x NJ] = Q[MR x D] @ K[NJ x D]^T: rows of Q and K are contiguous, so keys are read
// in place (no transposition); the accumulators stay in vector registers.
template <int MR, int NJ>
inline void tile_qk(int64_t D, const float* Q, int64_t ldq, const float* K, int64_t ldk, float* S,
                    int64_t lds) {
  simd::VecF acc[MR][NJ];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < NJ; ++j) {
      acc[r][j] = simd::VecF(0.0f);
    }
  }
  auto step = [&](int64_t d, auto load) {
    simd::VecF q[MR];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      q[r] = load(Q + r * ldq + d);
    }
#pragma GCC unroll 4
    for (int j = 0; j < NJ; ++j) {
      simd::VecF k = load(K + j * ldk + d);
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        acc[r][j] = simd::fma(q[r], k, acc[r][j]);
      }
    }
  };
  int64_t d = 0;
  for (; d + simd::kWidth <= D; d += simd::kWidth) {
    step(d, [](const float* p) { return simd::load(p); });
  }
  if (d < D) {
    int n = static_cast<int>(D - d);
    step(d, [n](const float* p) { return simd::load_partial(p, n); });
  }
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < NJ; ++j) {
      S[r * lds + j] = simd::hsum(acc[r][j]);
    }
  }
}

// S[M x N] = Q[M x D] @ K[N x D]^T, for rows [i, i + rows) only the keys before
// key_end(i, rows) (the others are left as they are).
template <typename KeyEnd>
void qk_scores(int64_t M, int64_t N, int64_t D, const float* Q, int64_t ldq, const float* K,
               int64_t ldk, float* S, int64_t lds, KeyEnd key_end) {
  constexpr int kRows = 2, kKeys = 4;
  int64_t i = 0;
  auto keys = [&]<int MR>(int64_t i) {
    int64_t n = std::min(N, key_end(i, MR));
    int64_t j = 0;
    for (; j + kKeys <= n; j += kKeys) {
      tile_qk<MR, kKeys>(D, Q + i * ldq, ldq, K + j * ldk, ldk, S + i * lds + j, lds);
    }
    for (; j < n; ++j) {
      tile_qk<MR, 1>(D, Q + i * ldq, ldq, K + j * ldk, ldk, S + i * lds + j, lds);
    }
  };
  for (; i + kRows <= M; i += kRows) {
    keys.template operator()<kRows>(i);
  }
  for (; i < M; ++i) {
    keys.template operator()<1>(i);
  }
}

template <typename KeyEnd>
void qk_scores(int64_t M, int64_t N, int64_t D, const double* Q, int64_t ldq, const double* K,
               int64_t ldk, double* S, int64_t lds, KeyEnd key_end) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0, n = std::min(N, key_end(i, 1)); j < n; ++j) {
      double acc = 0;
      for (int64_t d = 0; d < D; ++d) {
        acc += Q[i * ldq + d] * K[j * ldk + d];
      }
      S[i * lds + j] = acc;
    }
  }
}

// C[MR x NC] += A[MR x K] @ B[K x NC] over the terms k in [k0, K); all row-major, or A stored
// transposed (TransA: element (r, k) at A[k * lda + r]).
template <typename Acc, int MR, int NC, bool TransA = false>
inline void tile_pv(int64_t k0, int64_t K, const Acc* A, int64_t lda, const Acc* B, int64_t ldb,
                    Acc* C, int64_t ldc) {
  if constexpr (std::is_same_v<Acc, float>) {
    // Accumulators in vector registers: MR rows x NC / kWidth vectors. The k order is the same for
    // every MR, so a row's result does not depend on which rows share its tile: a prompt
    // evaluated in chunks gives the same bits as evaluated whole (as Apple MLX does).
    constexpr int NV = NC / simd::kWidth;
    simd::VecF acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        acc[r][v] = simd::load(C + r * ldc + v * simd::kWidth);
      }
    }
    for (int64_t k = k0; k < K; ++k) {
      simd::VecF b[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        b[v] = simd::load(B + k * ldb + v * simd::kWidth);
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        simd::VecF a = simd::broadcast(A[TransA ? k * lda + r : r * lda + k]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          acc[r][v] = simd::fma(a, b[v], acc[r][v]);
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        simd::store(C + r * ldc + v * simd::kWidth, acc[r][v]);
      }
    }
  } else {
    for (int64_t k = k0; k < K; ++k) {
      for (int r = 0; r < MR; ++r) {
        Acc a = A[TransA ? k * lda + r : r * lda + k];
        for (int c = 0; c < NC; ++c) {
          C[r * ldc + c] += a * B[k * ldb + c];
        }
      }
    }
  }
}

// Columns of a padded block: multiples of one vector.
template <typename Acc>
constexpr int64_t kLanes = simd::kWidth * sizeof(float) / sizeof(Acc);

template <typename Acc>
inline int64_t padded(int64_t n) {
  return (n + kLanes<Acc> - 1) / kLanes<Acc> * kLanes<Acc>;
}

// What a tile of output rows needs of a product: its columns [0, n_end) and its terms
// [k_begin, k_end). The rest are products with zeros, such as the probabilities of keys that a
// causal mask hides from every row of the tile, and are skipped: adding them changes no bit.
struct TileExtent {
  int64_t n_end, k_begin, k_end;
};

// O[M x N] += P[M x K] @ V[K x N] with N a multiple of kLanes; TransP: P stored transposed
// (element (i, k) at P[k * ldp + i]), as the backward's P^T dO and dS^T Q read it. extent(i,
// rows) says what output rows [i, i + rows) need (TileExtent); the other columns are left as
// they are.
template <bool TransP = false, typename Acc, typename Extent>
void accumulate_pv(int64_t M, int64_t N, int64_t K, const Acc* P, int64_t ldp, const Acc* V,
                   int64_t ldv, Acc* O, int64_t ldo, Extent extent) {
  constexpr int kRows = 6;
  constexpr int kWide = 2 * kLanes<Acc>;
  constexpr int kNarrow = kLanes<Acc>;
  auto rows = [&]<int NC>(int64_t j) {
    auto run = [&]<int MR>(int64_t i) {
      TileExtent e = extent(i, MR);
      int64_t k_end = std::min(e.k_end, K);
      if (j >= e.n_end || e.k_begin >= k_end) {
        return;
      }
      tile_pv<Acc, MR, NC, TransP>(e.k_begin, k_end, P + (TransP ? i : i * ldp), ldp, V + j, ldv,
                                   O + i * ldo + j, ldo);
    };
    int64_t i = 0;
    for (; i + kRows <= M; i += kRows) {
      run.template operator()<kRows>(i);
    }
    // The remaining rows (fewer than kRows) in one tile.
    switch (M - i) {
      case 5:
        return run.template operator()<5>(i);
      case 4:
        return run.template operator()<4>(i);
      case 3:
        return run.template operator()<3>(i);
      case 2:
        return run.template operator()<2>(i);
      case 1:
        return run.template operator()<1>(i);
    }
  };
  int64_t j = 0;
  for (; j + kWide <= N; j += kWide) {
    rows.template operator()<kWide>(j);
  }
  for (; j < N; j += kNarrow) {
    rows.template operator()<kNarrow>(j);
  }
}

// Kt[d * ldt + j] = K[j * ldk + d] for j < N, d < D: float32 in 8 x 8 blocks through registers
// (element by element, every store of a key's row goes to another cache line), the rest
// element by element.
template <typename Acc>
void transpose_keys(int64_t N, int64_t D, const Acc* K, int64_t ldk, Acc* Kt, int64_t ldt) {
  constexpr int W = simd::kWidth;
  int64_t j0 = 0;
  if constexpr (std::is_same_v<Acc, float>) {
    for (; j0 + W <= N && D >= W; j0 += W) {
      int64_t d0 = 0;
      for (; d0 + W <= D; d0 += W) {
        simd::VecF r[W];
        for (int i = 0; i < W; ++i) {
          r[i] = simd::load(K + (j0 + i) * ldk + d0);
        }
        simd::transpose8(r);
        for (int i = 0; i < W; ++i) {
          simd::store(Kt + (d0 + i) * ldt + j0, r[i]);
        }
      }
      for (; d0 < D; ++d0) {
        for (int64_t j = j0; j < j0 + W; ++j) {
          Kt[d0 * ldt + j] = K[j * ldk + d0];
        }
      }
    }
  }
  for (int64_t j = j0; j < N; ++j) {
    for (int64_t d = 0; d < D; ++d) {
      Kt[d * ldt + j] = K[j * ldk + d];
    }
  }
}

// S[M x N] = Q[M x D] @ K[N x D]^T as outer products against K's transpose (Kt: D rows of
// padded(N), filled here). A dot product per score ends in a horizontal sum, which costs as
// much as the products when D is short: the main job's attention (D = 32, forward and
// backward) took 36 ms per step with dot products, 33 ms with this. S needs padded(N) columns;
// the keys of rows [i, i + rows) from key_end(i, rows) on are zeros.
template <typename Acc, typename KeyEnd>
void qk_scores_outer(int64_t M, int64_t N, int64_t D, const Acc* Q, int64_t ldq, const Acc* K,
                     int64_t ldk, Acc* Kt, Acc* S, int64_t lds, KeyEnd key_end) {
  const int64_t np = padded<Acc>(N);
  transpose_keys(N, D, K, ldk, Kt, np);
  for (int64_t d = 0; d < D; ++d) {
    std::fill(Kt + d * np + N, Kt + (d + 1) * np, Acc(0));
  }
  for (int64_t r = 0; r < M; ++r) {
    std::fill_n(S + r * lds, np, Acc(0));
  }
  accumulate_pv(M, np, D, Q, ldq, Kt, np, S, lds, [&](int64_t i, int rows) {
    return TileExtent{key_end(i, rows), 0, D};
  });
}

// The scores of a tile of query rows against a block of keys: outer products for short heads
// (D < 64, where a dot product's horizontal sum costs more than its products), dot products
// otherwise, where the transpose of K would cost a decode step (one row) as much as its
// scores. The choice depends on D alone, never on the tile's rows, so a row's scores have the
// same bits whichever rows share its tile. Kt: scratch of D x padded(N); S needs padded(N)
// columns. key_end(i, rows): the keys that rows [i, i + rows) see end there (a causal mask);
// their scores past it are not computed and hold no particular value.
template <typename Acc, typename KeyEnd>
void block_scores(int64_t M, int64_t N, int64_t D, const Acc* Q, int64_t ldq, const Acc* K,
                  int64_t ldk, Acc* Kt, Acc* S, int64_t lds, KeyEnd key_end) {
  if (D < 64) {
    qk_scores_outer(M, N, D, Q, ldq, K, ldk, Kt, S, lds, key_end);
  } else {
    qk_scores(M, N, D, Q, ldq, K, ldk, S, lds, key_end);
  }
}

// x[i] = exp(x[i]) in place.
inline void exp_inplace(float* x, int64_t n) { simd::exp(x, x, n); }
inline void exp_inplace(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i]);
  }
}

struct View4 {
  int64_t s0, s1, s2, s3;
  explicit View4(const array& a)
      : s0(a.strides()[0]), s1(a.strides()[1]), s2(a.strides()[2]), s3(a.strides()[3]) {}
  int64_t at(int64_t i0, int64_t i1, int64_t i2) const { return i0 * s0 + i1 * s1 + i2 * s2; }
};

// Rows [j0, j0 + n) of head h of batch entry b of x (keys or values) as Acc rows of `width`
// elements at stride ld: the input's own memory when it already has that form, else a copy in
// buf (rows of ld_buf elements, whose padding the caller keeps zero). `pad`: the rows are read
// up to a multiple of kLanes.
template <typename T, typename Acc = AccType<T>>
const Acc* load_block(const array& x, const View4& xv, int64_t b, int64_t h, int64_t j0, int64_t n,
                      int64_t width, bool pad, Acc* buf, int64_t ld_buf, int64_t& ld) {
  const T* src = x.data<T>() + xv.at(b, h, j0);
  if (std::is_same_v<T, Acc> && xv.s3 == 1 && (!pad || width % kLanes<Acc> == 0)) {
    ld = xv.s2;
    return reinterpret_cast<const Acc*>(src);
  }
  for (int64_t j = 0; j < n; ++j) {
    load_row(src + j * xv.s2, xv.s3, width, buf + j * ld_buf);
  }
  ld = ld_buf;
  return buf;
}

// Of keys [j0, j0 + n), the end (relative to j0) of those that rows [i, i + count) see; a
// row's `limit` is its last visible key.
template <typename Row>
int64_t visible_end(const Row* rows, int64_t i, int count, int64_t j0, int64_t n) {
  int64_t last = rows[i].limit;
  for (int r = 1; r < count; ++r) {
    last = std::max(last, rows[i + r].limit);
  }
  return std::clamp<int64_t>(last + 1 - j0, 0, n);
}

// The first of rows [0, R) that sees `key` or a later key: the rows before it see none of them.
template <typename Row>
int64_t first_row_seeing(const Row* rows, int64_t R, int64_t key) {
  int64_t r = 0;
  while (r < R && rows[r].limit < key) {
    ++r;
  }
  return r;
}

// Masks the scores s[0, n) of query (b, h, t) against keys [j0, j0 + n): a boolean mask (false
// gives -inf) or an additive one (of type T), then -inf past `limit`, the last visible key.
template <typename T, typename Acc>
void mask_scores(const array* mask, const View4& mv, int64_t b, int64_t h, int64_t t, int64_t j0,
                 int64_t n, int64_t limit, Acc* s) {
  constexpr Acc kNegInf = -std::numeric_limits<Acc>::infinity();
  if (mask) {
    int64_t st = mv.s3;
    if (mask->dtype() == bool_) {
      const bool* mrow = mask->data<bool>() + mv.at(b, h, t) + j0 * st;
      for (int64_t j = 0; j < n; ++j) {
        s[j] = mrow[j * st] ? s[j] : kNegInf;
      }
    } else {
      const T* mrow = mask->data<T>() + mv.at(b, h, t) + j0 * st;
      for (int64_t j = 0; j < n; ++j) {
        s[j] += static_cast<Acc>(mrow[j * st]);
      }
    }
  }
  for (int64_t j = std::max<int64_t>(limit + 1 - j0, 0); j < n; ++j) {
    s[j] = kNegInf;
  }
}

}  // namespace mlx::core::fast::detail
