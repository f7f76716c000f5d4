// Fused attention backward in the style of FlashAttention-2. A task is one batch entry and one
// key/value head; it walks tiles of query positions, the query heads that share the key/value
// head stacked as rows (as in the forward). Per tile:
//   1. the scores of the tile's rows against every visible key (rows x T_kv, the only
//      score-sized buffer), masked, turned into probabilities P with exact row statistics;
//   2. per block of keys: dV += P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dO * O)),
//      dQ += dS K, dK += dS^T Q (scales folded into Q and dQ).
// dK and dV accumulate over the tiles of a task (in the outputs themselves when they are
// float32 with rows of whole vectors, else in per-thread float buffers).
//
// The forward's lse, when the primitive has it as its last input, is not read: step 1 holds
// every score of the tile's rows anyway, so their exact maximum and sum cost one pass over
// them each, little next to the four products per score of step 2; and a float32 lse would
// limit float64 gradients to float32's precision. (The GPU's backward, which would otherwise
// run a whole forward pass for them, reads it.)
#include <cmath>
#include <limits>
#include <vector>

#include "mlx/backend/cpu/fast_sdpa.h"
#include "mlx/backend/cpu/softmax_row.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cpu;
using namespace detail;

template <typename T>
class AttentionVJP {
  using Acc = AccType<T>;
  static constexpr int64_t kKeyBlock = 64;
  static constexpr int64_t kTaskRows = 64;
  static constexpr Acc kNegInf = -std::numeric_limits<Acc>::infinity();

 public:
  AttentionVJP(const std::vector<array>& in, std::vector<array>& out, float scale, bool causal,
               bool has_mask, bool has_sinks)
      : q_(in[0]),
        k_(in[1]),
        v_(in[2]),
        o_(in[3 + has_mask + has_sinks]),
        do_(in[4 + has_mask + has_sinks]),
        qv_(in[0]),
        kv_(in[1]),
        vv_(in[2]),
        ov_(o_),
        dov_(do_),
        dq_(out[0]),
        dk_(out[1]),
        dv_(out[2]),
        scale_(scale),
        causal_(causal) {
    if (has_mask) {
      mask_ = &in[3];
      mv_ = View4(*mask_);
    }
    if (has_sinks) {
      sinks_ = &in[3 + has_mask];
      dsinks_ = &out[3];
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
    dp_ = padded<Acc>(D_);
    dvp_ = padded<Acc>(Dv_);
    // dK and dV accumulate in place when their rows already are padded Acc rows.
    in_place_ = std::is_same_v<T, Acc> && dp_ == D_ && dvp_ == Dv_;
  }

  void run() {
    for (array* a : {&dq_, &dk_, &dv_}) {
      a->set_data(allocator::malloc(a->nbytes()));
    }
    std::vector<Acc> sink_grad(B_ * n_q_, Acc(0));  // per (batch, query head)
    int64_t tasks = B_ * n_kv_;
    double work = double(group_ * t_q_) * double(t_kv_ + 1) * double(2 * D_ + 3 * Dv_ + 8);
    int64_t grain = std::max<int64_t>(1, static_cast<int64_t>((1 << 18) / std::max(work, 1.0)));
    parallel_for(tasks, grain, [&](int64_t t0, int64_t t1) {
      Buffers buf(*this);
      for (int64_t t = t0; t < t1; ++t) {
        task(t / n_kv_, t % n_kv_, buf, sink_grad.data());
      }
    });
    if (dsinks_) {
      dsinks_->set_data(allocator::malloc(dsinks_->nbytes()));
      for (int64_t h = 0; h < n_q_; ++h) {
        Acc s = 0;
        for (int64_t b = 0; b < B_; ++b) {
          s += sink_grad[b * n_q_ + h];
        }
        dsinks_->data<T>()[h] = static_cast<T>(s);
      }
    }
  }

 private:
  struct Row {
    int64_t h, t, limit;  // query head, query position, last visible key (causal)
    bool dead;            // sees no key and has no sink: zeros, as in the forward
  };

  struct Buffers {
    int64_t ldp;  // row stride of the probabilities
    // Per tile row: scaled queries, output cotangents, dQ, probabilities, rowsum(dO * O), the
    // sink's and the keys' unnormalized probabilities summed.
    LineVector<Acc> q, dout, dq, p, drow, p_sink, p_sum;
    std::vector<int64_t> n_keys;  // per tile row: the keys summed
    // Per key block: dP then dS, keys and values, and the transpose of keys or values.
    LineVector<Acc> ds, kb, vb, kt;
    LineVector<Acc> dk, dv;  // per key (when not accumulating in the outputs)
    std::vector<Row> rows;
    explicit Buffers(const AttentionVJP& a) : ldp(padded<Acc>(a.t_kv_)) {
      int64_t r = a.group_ * a.q_tile_;
      q.assign(r * a.dp_, Acc(0));
      dout.assign(r * a.dvp_, Acc(0));
      dq.resize(r * a.dp_);
      p.resize(r * ldp);
      drow.resize(r);
      p_sink.resize(r);
      p_sum.resize(r);
      n_keys.resize(r);
      ds.resize(r * kKeyBlock);
      kb.assign(kKeyBlock * a.dp_, Acc(0));
      vb.resize(kKeyBlock * a.Dv_);
      kt.resize(kKeyBlock * std::max(a.D_, a.Dv_));
      if (!a.in_place_) {
        dk.resize(a.t_kv_ * a.dp_);
        dv.resize(a.t_kv_ * a.dvp_);
      }
      rows.resize(r);
    }
  };

  void task(int64_t b, int64_t hkv, Buffers& buf, Acc* sink_grad) {
    int64_t kv_offset = (b * n_kv_ + hkv) * t_kv_;
    Acc* dk = in_place_ ? reinterpret_cast<Acc*>(dk_.data<T>()) + kv_offset * D_ : buf.dk.data();
    Acc* dv = in_place_ ? reinterpret_cast<Acc*>(dv_.data<T>()) + kv_offset * Dv_ : buf.dv.data();
    std::fill_n(dk, t_kv_ * dp_, Acc(0));
    std::fill_n(dv, t_kv_ * dvp_, Acc(0));
    for (int64_t qt = 0; qt < n_qtiles_; ++qt) {
      int64_t t0 = qt * q_tile_, nt = std::min(q_tile_, t_q_ - t0);
      tile(b, hkv, t0, nt, buf, dk, dv, sink_grad);
    }
    if (!in_place_) {
      T* dk_out = dk_.data<T>() + kv_offset * D_;
      T* dv_out = dv_.data<T>() + kv_offset * Dv_;
      for (int64_t j = 0; j < t_kv_; ++j) {
        for (int64_t c = 0; c < D_; ++c) {
          dk_out[j * D_ + c] = static_cast<T>(dk[j * dp_ + c]);
        }
        for (int64_t c = 0; c < Dv_; ++c) {
          dv_out[j * Dv_ + c] = static_cast<T>(dv[j * dvp_ + c]);
        }
      }
    }
  }

  // Query positions [t0, t0 + nt) of every head of the group of key/value head hkv.
  void tile(int64_t b, int64_t hkv, int64_t t0, int64_t nt, Buffers& buf, Acc* dk, Acc* dv,
            Acc* sink_grad) {
    int64_t R = group_ * nt;
    int64_t key_end = load_rows(b, hkv, t0, nt, buf);
    Acc* p = buf.p.data();
    const int64_t ldp = buf.ldp;

    // Keys a causal mask hides from a whole tile of rows are skipped: their probabilities and
    // dS are zeros.
    const Row* rows = buf.rows.data();
    auto seen = [rows](int64_t j0, int64_t bk) {
      return [=](int64_t i, int count) { return visible_end(rows, i, count, j0, bk); };
    };
    auto rows_seeing = [rows, R](int64_t j0, int64_t n) {
      return [=](int64_t i, int /*keys*/) {
        return TileExtent{n, first_row_seeing(rows, R, j0 + i), R};
      };
    };

    // 1. Probabilities of the visible keys.
    for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
      int64_t bk = std::min(kKeyBlock, key_end - j0), ldk;
      const Acc* kb = load_block<T>(k_, kv_, b, hkv, j0, bk, D_, false, buf.kb.data(), dp_, ldk);
      block_scores(R, bk, D_, buf.q.data(), dp_, kb, ldk, buf.kt.data(), p + j0, ldp, seen(j0, bk));
      for (int64_t r = 0; r < R; ++r) {
        const Row& row = buf.rows[r];
        mask_scores<T>(mask_, mv_, b, row.h, row.t, j0, bk, row.limit, p + r * ldp + j0);
      }
    }
    for (int64_t r = 0; r < R; ++r) {
      buf.p_sink[r] = exponentials(buf.rows[r], p + r * ldp, key_end);
    }
    std::fill_n(buf.n_keys.begin(), R, key_end);
    lane_sum_rows(p, ldp, buf.n_keys.data(), R, buf.p_sum.data());
    for (int64_t r = 0; r < R; ++r) {
      if (!buf.rows[r].dead) {
        normalize(b, buf.rows[r], p + r * ldp, key_end, buf.p_sink[r], buf.p_sum[r], buf.drow[r],
                  sink_grad);
      }
    }

    // 2. Gradients, one block of keys at a time.
    std::fill(buf.dq.begin(), buf.dq.end(), Acc(0));
    for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
      int64_t bk = std::min(kKeyBlock, key_end - j0), ldk, ldv;
      auto keys_seen = seen(j0, bk);
      accumulate_pv<true>(bk, dvp_, R, p + j0, ldp, buf.dout.data(), dvp_, dv + j0 * dvp_, dvp_,
                          rows_seeing(j0, dvp_));
      const Acc* vb = load_block<T>(v_, vv_, b, hkv, j0, bk, Dv_, false, buf.vb.data(), Dv_, ldv);
      Acc* ds = buf.ds.data();
      block_scores(R, bk, Dv_, buf.dout.data(), dvp_, vb, ldv, buf.kt.data(), ds, kKeyBlock,
                   keys_seen);
      for (int64_t r = 0; r < R; ++r) {
        const Acc* pr = p + r * ldp + j0;
        Acc* dsr = ds + r * kKeyBlock;
        Acc d = buf.drow[r];
        int64_t visible = visible_end(rows, r, 1, j0, bk);
        for (int64_t j = 0; j < visible; ++j) {
          dsr[j] = pr[j] * (dsr[j] - d);
        }
        std::fill(dsr + visible, dsr + bk, Acc(0));
      }
      const Acc* kb = load_block<T>(k_, kv_, b, hkv, j0, bk, D_, true, buf.kb.data(), dp_, ldk);
      accumulate_pv(R, dp_, bk, ds, kKeyBlock, kb, ldk, buf.dq.data(), dp_,
                    [&](int64_t i, int count) {
                      return TileExtent{dp_, 0, keys_seen(i, count)};
                    });
      accumulate_pv<true>(bk, dp_, R, ds, kKeyBlock, buf.q.data(), dp_, dk + j0 * dp_, dp_,
                          rows_seeing(j0, dp_));
    }

    for (int64_t r = 0; r < R; ++r) {
      const Row& row = buf.rows[r];
      const Acc* g = buf.dq.data() + r * dp_;
      T* dst = dq_.data<T>() + ((b * n_q_ + row.h) * t_q_ + row.t) * D_;
      Acc s = row.dead ? Acc(0) : scale_;
      for (int64_t c = 0; c < D_; ++c) {
        dst[c] = static_cast<T>(g[c] * s);
      }
    }
  }

  // Fills the tile's rows (heads, positions, scaled queries, output cotangents and
  // rowsum(dO * O)); returns the end of the keys any of them sees.
  int64_t load_rows(int64_t b, int64_t hkv, int64_t t0, int64_t nt, Buffers& buf) {
    int64_t key_end = 0;
    for (int64_t r = 0; r < group_ * nt; ++r) {
      Row& row = buf.rows[r];
      row.h = hkv * group_ + r / nt;
      row.t = t0 + r % nt;
      row.limit = causal_ ? row.t + t_kv_ - t_q_ : t_kv_ - 1;
      key_end = std::max(key_end, std::min(row.limit + 1, t_kv_));
      Acc* q = buf.q.data() + r * dp_;
      load_row(q_.data<T>() + qv_.at(b, row.h, row.t), qv_.s3, D_, q);
      for (int64_t d = 0; d < D_; ++d) {
        q[d] *= scale_;
      }
      Acc* g = buf.dout.data() + r * dvp_;
      load_row(do_.data<T>() + dov_.at(b, row.h, row.t), dov_.s3, Dv_, g);
      const T* o = o_.data<T>() + ov_.at(b, row.h, row.t);
      buf.drow[r] =
          lane_sum_at<Acc>(Dv_, [&](int64_t c) { return g[c] * static_cast<Acc>(o[c * ov_.s3]); });
    }
    return key_end;
  }

  // Turns one row of masked scores s[0, n) into exponentials relative to the row's maximum (a
  // sink, when there is one, included); returns the sink's. A row that sees nothing is dead:
  // zeros.
  Acc exponentials(Row& row, Acc* s, int64_t n) {
    Acc sink = sinks_ ? static_cast<Acc>(sinks_->data<T>()[row.h * sinks_->strides()[0]]) : kNegInf;
    Acc m = std::max(sink, static_cast<Acc>(cpu::row_max(s, n).value));
    row.dead = m == kNegInf;
    if (row.dead) {
      std::fill_n(s, n, Acc(0));
      return 0;
    }
    // Scores past the row's last visible key are -inf: their probabilities are zeros.
    int64_t visible = std::clamp<int64_t>(std::min(row.limit + 1, t_kv_), 0, n);
    for (int64_t j = 0; j < visible; ++j) {
      s[j] -= m;
    }
    exp_inplace(s, visible);
    std::fill(s + visible, s + n, Acc(0));
    return sinks_ ? std::exp(sink - m) : Acc(0);
  }

  // Divides a row's exponentials s[0, n) by their sum with the sink's, p_sink + sum, and adds
  // the sink's gradient -P_sink * rowsum(dO * O).
  void normalize(int64_t b, const Row& row, Acc* s, int64_t n, Acc p_sink, Acc sum, Acc drow,
                 Acc* sink_grad) {
    Acc inv = Acc(1) / (p_sink + sum);
    for (int64_t j = 0; j < n; ++j) {
      s[j] *= inv;
    }
    sink_grad[b * n_q_ + row.h] -= p_sink * inv * drow;
  }

  const array& q_;
  const array& k_;
  const array& v_;
  const array& o_;
  const array& do_;
  View4 qv_, kv_, vv_, ov_, dov_;
  array& dq_;
  array& dk_;
  array& dv_;
  const array* mask_ = nullptr;
  View4 mv_{qv_};
  const array* sinks_ = nullptr;
  array* dsinks_ = nullptr;
  Acc scale_;
  bool causal_;
  bool in_place_;
  int64_t B_, n_q_, t_q_, D_, n_kv_, t_kv_, Dv_, group_, q_tile_, n_qtiles_, dp_, dvp_;
};

}  // namespace

void ScaledDotProductAttentionVJP::eval_cpu(const std::vector<array>& inputs,
                                            std::vector<array>& outputs) {
  dispatch_float(outputs[0].dtype(), "scaled_dot_product_attention_vjp", [&]<typename T>() {
    AttentionVJP<T>(inputs, outputs, scale_, causal_, has_mask_, has_sinks_).run();
  });
}

}  // namespace mlx::core::fast
