// Fused attention, blockwise with an online softmax (the scores of only one block of keys
// exist at a time). A task is one batch entry, one key/value head and a tile of query
// positions; the query heads that share the key/value head (grouped-query attention) are
// stacked as rows of the same task, so each key/value block is read (and, unless it is
// float32 with contiguous features, converted) once for all of them. Asked for lse, each row's
// log-sum-exp comes from its running maximum and sum: m + log(l).
#include "mlx/backend/cpu/fast_sdpa.h"

#include <cmath>
#include <limits>
#include <vector>

#include "mlx/backend/cpu/softmax_row.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/fast.h"
#include "mlx/runtime/kernel_counter.h"

namespace mlx::core::fast {

namespace {

using namespace cpu;
using namespace detail;

template <typename T>
class Attention {
  using Acc = AccType<T>;
  static constexpr int64_t kKeyBlock = 64;
  static constexpr int64_t kTaskRows = 64;

 public:
  Attention(const std::vector<array>& in, array& out, float* lse, float scale, bool causal,
            bool has_mask, bool has_sinks)
      : q_(in[0]),
        k_(in[1]),
        v_(in[2]),
        out_(out),
        lse_(lse),
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
    // Per row: running max and sum, and the sum of the block's probabilities.
    LineVector<Acc> q, s, o, kb, kt, vb, m, l, block_sum;
    std::vector<int64_t> visible;  // per row: the block's keys it sees
    std::vector<Row> rows;
    explicit Buffers(const Attention& a) : dvp(padded<Acc>(a.Dv_)) {
      int64_t r = a.group_ * a.q_tile_;
      q.resize(r * a.D_);
      s.resize(r * kKeyBlock);
      o.resize(r * dvp);
      kb.resize(kKeyBlock * a.D_);
      kt.resize(kKeyBlock * a.D_);
      vb.assign(kKeyBlock * dvp, Acc(0));
      m.resize(r);
      l.resize(r);
      block_sum.resize(r);
      visible.resize(r);
      rows.resize(r);
    }
  };

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
      // Keys a causal mask hides from a whole tile of rows are skipped.
      auto seen = [&](int64_t i, int rows) {
        return visible_end(buf.rows.data(), i, rows, j0, bk);
      };
      const Acc* kb = load_block<T>(k_, kv_, b, hkv, j0, bk, D_, false, buf.kb.data(), D_, ldk);
      block_scores(R, bk, D_, buf.q.data(), D_, kb, ldk, buf.kt.data(), buf.s.data(), kKeyBlock,
                   seen);
      for (int64_t r = 0; r < R; ++r) {
        softmax_block(b, j0, bk, buf.rows[r], buf.s.data() + r * kKeyBlock, buf.m[r], buf.l[r],
                      buf.visible[r], buf.o.data() + r * buf.dvp, buf.dvp);
      }
      // Summed up to each row's own last visible key, not the tile's: which rows share a tile
      // must not change how a row's sum is associated.
      lane_sum_rows(buf.s.data(), kKeyBlock, buf.visible.data(), R, buf.block_sum.data());
      for (int64_t r = 0; r < R; ++r) {
        buf.l[r] += buf.block_sum[r];
      }
      const Acc* vb =
          load_block<T>(v_, vv_, b, hkv, j0, bk, Dv_, true, buf.vb.data(), buf.dvp, ldv);
      accumulate_pv(R, buf.dvp, bk, buf.s.data(), kKeyBlock, vb, ldv, buf.o.data(), buf.dvp,
                    [&](int64_t i, int rows) {
                      return TileExtent{buf.dvp, 0, seen(i, rows)};
                    });
    }

    for (int64_t r = 0; r < R; ++r) {
      const Row& row = buf.rows[r];
      // No visible key and no sink: the row is zeros (a "safe" softmax, as PyTorch's), so
      // fully masked rows (left padding) cannot spread NaN through later layers.
      Acc inv = buf.l[r] > 0 ? Acc(1) / buf.l[r] : Acc(0);
      const Acc* o = buf.o.data() + r * buf.dvp;
      T* dst = out_.data<T>() + ((b * n_q_ + row.h) * t_q_ + row.t) * Dv_;
      for (int64_t c = 0; c < Dv_; ++c) {
        dst[c] = static_cast<T>(o[c] * inv);
      }
      if (lse_) {
        lse_[(b * n_q_ + row.h) * t_q_ + row.t] =
            buf.l[r] > 0 ? static_cast<float>(buf.m[r] + std::log(buf.l[r])) : -INFINITY;
      }
    }
  }

  // Masks one row of block scores s[0, bk), turns them into probabilities relative to the
  // updated running max m, and rescales the row's sum l and output o accordingly; the
  // probabilities s[0, visible) are to be added to l.
  void softmax_block(int64_t b, int64_t j0, int64_t bk, const Row& row, Acc* s, Acc& m, Acc& l,
                     int64_t& visible, Acc* o, int64_t dvp) {
    constexpr Acc kNegInf = -std::numeric_limits<Acc>::infinity();
    mask_scores<T>(mask_, mv_, b, row.h, row.t, j0, bk, row.limit, s);
    Acc m_new = std::max(m, static_cast<Acc>(cpu::row_max(s, bk).value));
    if (m_new == kNegInf) {  // nothing visible yet
      std::fill_n(s, bk, Acc(0));
      visible = 0;
      return;
    }
    // Scores past the row's last visible key are -inf: their probabilities are zeros.
    visible = std::clamp<int64_t>(std::min(row.limit + 1, t_kv_) - j0, 0, bk);
    for (int64_t j = 0; j < visible; ++j) {
      s[j] -= m_new;
    }
    exp_inplace(s, visible);
    std::fill(s + visible, s + bk, Acc(0));
    Acc correction = std::exp(m - m_new);
    l *= correction;
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
  float* lse_;  // dense (B, N_q, T_q), or null
  View4 qv_, kv_, vv_;
  const array* mask_ = nullptr;
  View4 mv_{qv_};
  const array* sinks_ = nullptr;
  Acc scale_;
  bool causal_;
  int64_t B_, n_q_, t_q_, D_, n_kv_, t_kv_, Dv_, group_, q_tile_, n_qtiles_;
};

}  // namespace

void ScaledDotProductAttention::eval_cpu(const std::vector<array>& inputs,
                                         std::vector<array>& outputs) {
  array& out = outputs[0];
  out.set_data(allocator::malloc(out.nbytes()));
  float* lse = nullptr;
  if (output_lse_) {
    outputs[1].set_data(allocator::malloc(outputs[1].nbytes()));
    lse = outputs[1].data<float>();
    core::detail::count_path("ScaledDotProductAttention:lse");
  }
  // Without values (D_v = 0) the rows still have their log-sum-exp.
  if (out.size() == 0 && (!lse || outputs[1].size() == 0)) {
    return;
  }
  dispatch_float(out.dtype(), "scaled_dot_product_attention", [&]<typename T>() {
    Attention<T>(inputs, out, lse, scale_, causal_, has_mask_, has_sinks_).run();
  });
}

}  // namespace mlx::core::fast
