// Fused attention, blockwise with an online softmax (the scores of only one block of keys
// exist at a time). A task is one batch entry, one key/value head and a tile of query
// positions; the query heads that share the key/value head (grouped-query attention) are
// stacked as rows of the same task, so each key/value block is read (and, unless it is
// float32 with contiguous features, converted) once for all of them.
#include <cmath>
#include <limits>
#include <vector>

#include "mlx/backend/cpu/fast_common.h"
#include "mlx/backend/cpu/simd/vec.h"
#include "mlx/backend/cpu/simd/vmath.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cpu;
using detail::AccType;

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

// S[M x N] = Q[M x D] @ K[N x D]^T.
inline void qk_scores(int64_t M, int64_t N, int64_t D, const float* Q, int64_t ldq, const float* K,
                      int64_t ldk, float* S, int64_t lds) {
  constexpr int kRows = 2, kKeys = 4;
  int64_t i = 0;
  auto keys = [&]<int MR>(int64_t i) {
    int64_t j = 0;
    for (; j + kKeys <= N; j += kKeys) {
      tile_qk<MR, kKeys>(D, Q + i * ldq, ldq, K + j * ldk, ldk, S + i * lds + j, lds);
    }
    for (; j < N; ++j) {
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

inline void qk_scores(int64_t M, int64_t N, int64_t D, const double* Q, int64_t ldq,
                      const double* K, int64_t ldk, double* S, int64_t lds) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t d = 0; d < D; ++d) {
        acc += Q[i * ldq + d] * K[j * ldk + d];
      }
      S[i * lds + j] = acc;
    }
  }
}

// C[MR x NC] += A[MR x K] @ B[K x NC]; all row-major.
template <typename Acc, int MR, int NC>
inline void tile_pv(int64_t K, const Acc* A, int64_t lda, const Acc* B, int64_t ldb, Acc* C,
                    int64_t ldc) {
  if constexpr (std::is_same_v<Acc, float>) {
    // Accumulators in vector registers: MR rows x NC / 8 vectors. Few rows give few
    // independent sums, so then even and odd k go to separate sets (FMA latency).
    constexpr int NV = NC / simd::kWidth;
    constexpr int NS = MR <= 2 ? 2 : 1;
    simd::VecF acc[NS][MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        acc[0][r][v] = simd::load(C + r * ldc + v * simd::kWidth);
        if constexpr (NS == 2) {
          acc[1][r][v] = simd::VecF(0.0f);
        }
      }
    }
    auto step = [&](int set, int64_t k) {
      simd::VecF b[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        b[v] = simd::load(B + k * ldb + v * simd::kWidth);
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        simd::VecF a = simd::broadcast(A[r * lda + k]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          acc[set][r][v] = simd::fma(a, b[v], acc[set][r][v]);
        }
      }
    };
    int64_t k = 0;
    for (; k + NS <= K; k += NS) {
#pragma GCC unroll 2
      for (int set = 0; set < NS; ++set) {
        step(set, k + set);
      }
    }
    for (; k < K; ++k) {
      step(0, k);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        simd::VecF sum = acc[0][r][v];
        if constexpr (NS == 2) {
          sum = sum + acc[1][r][v];
        }
        simd::store(C + r * ldc + v * simd::kWidth, sum);
      }
    }
  } else {
    for (int64_t k = 0; k < K; ++k) {
      for (int r = 0; r < MR; ++r) {
        Acc a = A[r * lda + k];
        for (int c = 0; c < NC; ++c) {
          C[r * ldc + c] += a * B[k * ldb + c];
        }
      }
    }
  }
}

// Columns of a padded block: multiples of one 32-byte vector.
template <typename Acc>
constexpr int64_t kLanes = 32 / sizeof(Acc);

template <typename Acc>
int64_t padded(int64_t n) {
  return (n + kLanes<Acc> - 1) / kLanes<Acc> * kLanes<Acc>;
}

// O[M x N] += P[M x K] @ V[K x N] with N a multiple of kLanes.
template <typename Acc>
void accumulate_pv(int64_t M, int64_t N, int64_t K, const Acc* P, int64_t ldp, const Acc* V,
                   int64_t ldv, Acc* O, int64_t ldo) {
  constexpr int kRows = 6;
  constexpr int kWide = 2 * kLanes<Acc>;
  constexpr int kNarrow = kLanes<Acc>;
  auto rows = [&]<int NC>(int64_t j) {
    auto run = [&]<int MR>(int64_t i) {
      tile_pv<Acc, MR, NC>(K, P + i * ldp, ldp, V + j, ldv, O + i * ldo + j, ldo);
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

template <typename T>
class Attention {
  using Acc = AccType<T>;
  static constexpr int64_t kKeyBlock = 64;
  static constexpr int64_t kTaskRows = 64;

 public:
  Attention(const std::vector<array>& in, array& out, float scale, bool causal, bool has_mask,
            bool has_sinks)
      : q_(in[0]),
        k_(in[1]),
        v_(in[2]),
        out_(out),
        qv_(in[0]),
        kv_(in[1]),
        vv_(in[2]),
        scale_(scale),
        causal_(causal) {
    int next = 3;
    if (has_mask) {
      mask_ = &in[next++];
      mv_ = View4(*mask_);
    }
    if (has_sinks) {
      sinks_ = &in[next++];
    }
    B_ = q_.shape(0);
    n_q_ = q_.shape(1);
    t_q_ = q_.shape(2);
    D_ = q_.shape(3);
    n_kv_ = k_.shape(1);
    t_kv_ = k_.shape(2);
    Dv_ = v_.shape(3);
    group_ = n_q_ / n_kv_;
    q_tile_ = std::clamp<int64_t>(kTaskRows / group_, 1, std::max<int64_t>(t_q_, 1));
    n_qtiles_ = (t_q_ + q_tile_ - 1) / q_tile_;
  }

  void run() {
    int64_t tasks = B_ * n_kv_ * n_qtiles_;
    double work = double(group_ * q_tile_) * double(t_kv_ + 1) * double(D_ + Dv_ + 8);
    int64_t grain = std::max<int64_t>(1, static_cast<int64_t>((1 << 18) / work));
    parallel_for(tasks, grain, [&](int64_t t0, int64_t t1) {
      Buffers buf(*this);
      for (int64_t t = t0; t < t1; ++t) {
        task(t, buf);
      }
    });
  }

 private:
  struct Row {
    int64_t h, t, limit;  // query head, query position, last visible key (causal)
  };

  struct Buffers {
    int64_t dvp;
    std::vector<Acc> q, s, o, kb, vb, m, l;
    std::vector<Row> rows;
    explicit Buffers(const Attention& a) : dvp(padded<Acc>(a.Dv_)) {
      int64_t r = a.group_ * a.q_tile_;
      q.resize(r * a.D_);
      s.resize(r * kKeyBlock);
      o.resize(r * dvp);
      kb.resize(kKeyBlock * a.D_);
      vb.assign(kKeyBlock * dvp, Acc(0));
      m.resize(r);
      l.resize(r);
      rows.resize(r);
    }
  };

  // Rows [j0, j0 + n) of head h of x (keys or values) as Acc rows of `width` elements at
  // stride ld: the input's own memory when it already has that form, else a copy in buf
  // (rows of ld_buf elements). `pad`: the rows are read up to a multiple of kLanes.
  const Acc* block_rows(const array& x, const View4& xv, int64_t b, int64_t h, int64_t j0,
                        int64_t n, int64_t width, bool pad, Acc* buf, int64_t ld_buf,
                        int64_t& ld) const {
    const T* src = x.data<T>() + xv.at(b, h, j0);
    if (std::is_same_v<T, Acc> && xv.s3 == 1 && (!pad || width % kLanes<Acc> == 0)) {
      ld = xv.s2;
      return reinterpret_cast<const Acc*>(src);
    }
    for (int64_t j = 0; j < n; ++j) {
      detail::load_row(src + j * xv.s2, xv.s3, width, buf + j * ld_buf);
    }
    ld = ld_buf;
    return buf;
  }

  void task(int64_t task_id, Buffers& buf) {
    int64_t qt = task_id % n_qtiles_;
    int64_t hkv = (task_id / n_qtiles_) % n_kv_;
    int64_t b = task_id / (n_qtiles_ * n_kv_);
    int64_t t0 = qt * q_tile_, nt = std::min(q_tile_, t_q_ - t0);
    int64_t R = group_ * nt;
    constexpr Acc kNegInf = -std::numeric_limits<Acc>::infinity();

    // Rows: scaled queries, running max / sum (a sink starts both), zeroed outputs.
    int64_t key_end = 0;
    for (int64_t r = 0; r < R; ++r) {
      Row& row = buf.rows[r];
      row.h = hkv * group_ + r / nt;
      row.t = t0 + r % nt;
      row.limit = causal_ ? row.t + t_kv_ - t_q_ : t_kv_ - 1;
      key_end = std::max(key_end, std::min(row.limit + 1, t_kv_));
      const T* qrow = q_.data<T>() + qv_.at(b, row.h, row.t);
      Acc* qb = buf.q.data() + r * D_;
      for (int64_t d = 0; d < D_; ++d) {
        qb[d] = static_cast<Acc>(qrow[d * qv_.s3]) * scale_;
      }
      if (sinks_) {
        buf.m[r] = static_cast<Acc>(sinks_->data<T>()[row.h * sinks_->strides()[0]]);
        buf.l[r] = 1;
      } else {
        buf.m[r] = kNegInf;
        buf.l[r] = 0;
      }
      std::fill_n(buf.o.data() + r * buf.dvp, buf.dvp, Acc(0));
    }

    for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
      int64_t bk = std::min(kKeyBlock, key_end - j0);
      int64_t ldk, ldv;
      const Acc* kb = block_rows(k_, kv_, b, hkv, j0, bk, D_, false, buf.kb.data(), D_, ldk);
      qk_scores(R, bk, D_, buf.q.data(), D_, kb, ldk, buf.s.data(), kKeyBlock);
      for (int64_t r = 0; r < R; ++r) {
        softmax_block(b, j0, bk, buf.rows[r], buf.s.data() + r * kKeyBlock, buf.m[r], buf.l[r],
                      buf.o.data() + r * buf.dvp, buf.dvp);
      }
      const Acc* vb = block_rows(v_, vv_, b, hkv, j0, bk, Dv_, true, buf.vb.data(), buf.dvp, ldv);
      accumulate_pv(R, buf.dvp, bk, buf.s.data(), kKeyBlock, vb, ldv, buf.o.data(), buf.dvp);
    }

    for (int64_t r = 0; r < R; ++r) {
      const Row& row = buf.rows[r];
      Acc inv = Acc(1) / buf.l[r];  // no visible key and no sink: 0 * inf = NaN
      const Acc* o = buf.o.data() + r * buf.dvp;
      T* dst = out_.data<T>() + ((b * n_q_ + row.h) * t_q_ + row.t) * Dv_;
      for (int64_t c = 0; c < Dv_; ++c) {
        dst[c] = static_cast<T>(o[c] * inv);
      }
    }
  }

  // Masks one row of block scores s[0, bk), turns them into probabilities relative to the
  // updated running max m, and rescales the row's sum l and output o accordingly.
  void softmax_block(int64_t b, int64_t j0, int64_t bk, const Row& row, Acc* s, Acc& m, Acc& l,
                     Acc* o, int64_t dvp) {
    constexpr Acc kNegInf = -std::numeric_limits<Acc>::infinity();
    if (mask_) {
      int64_t st = mv_.s3;
      if (mask_->dtype() == bool_) {
        const bool* mrow = mask_->data<bool>() + mv_.at(b, row.h, row.t) + j0 * st;
        for (int64_t j = 0; j < bk; ++j) {
          s[j] = mrow[j * st] ? s[j] : kNegInf;
        }
      } else {
        const T* mrow = mask_->data<T>() + mv_.at(b, row.h, row.t) + j0 * st;
        for (int64_t j = 0; j < bk; ++j) {
          s[j] += static_cast<Acc>(mrow[j * st]);
        }
      }
    }
    for (int64_t j = std::max<int64_t>(row.limit + 1 - j0, 0); j < bk; ++j) {
      s[j] = kNegInf;
    }
    Acc block_max = kNegInf;
    for (int64_t j = 0; j < bk; ++j) {
      block_max = std::max(block_max, s[j]);
    }
    Acc m_new = std::max(m, block_max);
    if (m_new == kNegInf) {  // nothing visible yet
      std::fill_n(s, bk, Acc(0));
      return;
    }
    for (int64_t j = 0; j < bk; ++j) {
      s[j] -= m_new;
    }
    exp_inplace(s, bk);
    Acc correction = std::exp(m - m_new);
    l = l * correction + detail::lane_sum(s, bk, [](Acc v) { return v; });
    if (correction != Acc(1)) {
      for (int64_t c = 0; c < dvp; ++c) {
        o[c] *= correction;
      }
    }
    m = m_new;
  }

  const array& q_;
  const array& k_;
  const array& v_;
  array& out_;
  View4 qv_, kv_, vv_;
  const array* mask_ = nullptr;
  View4 mv_{qv_};
  const array* sinks_ = nullptr;
  Acc scale_;
  bool causal_;
  int64_t B_, n_q_, t_q_, D_, n_kv_, t_kv_, Dv_, group_, q_tile_, n_qtiles_;
};

}  // namespace

void ScaledDotProductAttention::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  dispatch_float(out.dtype(), "scaled_dot_product_attention", [&]<typename T>() {
    Attention<T>(inputs, out, scale_, causal_, has_mask_, has_sinks_).run();
  });
}

}  // namespace mlx::core::fast
