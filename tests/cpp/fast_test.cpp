// fast:: rms_norm, layer_norm, rope and scaled_dot_product_attention against naive float64
// references.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "test_utils.h"

namespace mlx::core {
namespace {

using test::expect_close;
using test::random_array;
using test::to_vector;

// ---------------------------------------------------------------------------- norms

std::vector<double> ref_norm(const std::vector<double>& x, int d, const std::vector<double>* w,
                             const std::vector<double>* b, double eps, bool layer) {
  std::vector<double> out(x.size());
  for (size_t r = 0; d > 0 && r < x.size() / d; ++r) {
    const double* row = x.data() + r * d;
    double mean = 0, ms = 0;
    if (layer) {
      for (int i = 0; i < d; ++i)
        mean += row[i] / d;
    }
    for (int i = 0; i < d; ++i)
      ms += (row[i] - mean) * (row[i] - mean) / d;
    double inv = 1 / std::sqrt(ms + eps);
    for (int i = 0; i < d; ++i) {
      out[r * d + i] = (row[i] - mean) * inv * (w ? (*w)[i] : 1.0) + (b ? (*b)[i] : 0.0);
    }
  }
  return out;
}

void check_rms(const array& x, const std::optional<array>& w, float eps = 1e-5f) {
  array out = fast::rms_norm(x, w, eps);
  std::vector<double> wv;
  if (w)
    wv = to_vector(*w);
  auto ref = ref_norm(to_vector(x), x.shape(-1), w ? &wv : nullptr, nullptr, eps, false);
  expect_close(out, ref, x.shape());
}

void check_layer(const array& x, const std::optional<array>& w, const std::optional<array>& b,
                 float eps = 1e-5f, double rtol = -1) {
  array out = fast::layer_norm(x, w, b, eps);
  std::vector<double> wv, bv;
  if (w)
    wv = to_vector(*w);
  if (b)
    bv = to_vector(*b);
  auto ref = ref_norm(to_vector(x), x.shape(-1), w ? &wv : nullptr, b ? &bv : nullptr, eps, true);
  expect_close(out, ref, x.shape(), rtol);
}

TEST(Fast, RMSNormDtypes) {
  for (Dtype t : test::kFloatDtypes) {
    SCOPED_TRACE(dtype_name(t));
    array x = random_array({3, 5, 67}, t, -2, 2, 1);
    array w = random_array({67}, t, -1, 1, 2);
    check_rms(x, w);
    check_rms(x, std::nullopt);
    array out = fast::rms_norm(x, w, 1e-5f);
    EXPECT_EQ(out.dtype(), t);
  }
  // Promotion: float16 x with float32 weight gives float32.
  array out = fast::rms_norm(random_array({2, 4}, float16), random_array({4}, float32), 1e-5f);
  EXPECT_EQ(out.dtype(), float32);
}

TEST(Fast, RMSNormLayouts) {
  array w = random_array({16}, float32, -1, 1, 2);
  check_rms(transpose(random_array({16, 6}, float32, -1, 1, 1)), w);
  check_rms(slice(random_array({6, 32}, float32, -1, 1, 3), {0, 0}, {6, 32}, {2, 2}), w);
  check_rms(slice(random_array({4, 16}, float32, -1, 1, 4), {3, 15}, {-5, -17}, {-1, -1}), w);
  check_rms(broadcast_to(random_array({16}, float32, -1, 1, 5), {5, 16}), w);
  check_rms(random_array({16}, float32, -1, 1, 6),
            slice(random_array({32}, float32, -1, 1, 7), {0}, {32}, {2}));
  check_rms(random_array({1, 1}, float32, -1, 1, 8), random_array({1}, float32, -1, 1, 9));
  expect_close(fast::rms_norm(random_array({0, 16}), w, 1e-5f), {}, {0, 16});
  expect_close(fast::rms_norm(random_array({3, 0}), std::nullopt, 1e-5f), {}, {3, 0});
  // Zero rows stay finite thanks to eps.
  expect_close(fast::rms_norm(zeros({2, 8}), std::nullopt, 1e-5f), std::vector<double>(16, 0.0),
               {2, 8});
  // Large: multithreaded rows.
  check_rms(random_array({1024, 1100}, float32, -1, 1, 10),
            random_array({1100}, float32, -1, 1, 11));
}

TEST(Fast, LayerNorm) {
  for (Dtype t : test::kFloatDtypes) {
    SCOPED_TRACE(dtype_name(t));
    array x = random_array({4, 3, 45}, t, -2, 2, 1);
    array w = random_array({45}, t, -1, 1, 2);
    array b = random_array({45}, t, -1, 1, 3);
    check_layer(x, w, b);
    check_layer(x, std::nullopt, b);
    check_layer(x, w, std::nullopt);
    check_layer(x, std::nullopt, std::nullopt);
  }
  // A large mean relative to the spread (stable two-step variance).
  array x = add(random_array({8, 256}, float32, -1, 1, 4), array(1000.0f));
  check_layer(x, std::nullopt, std::nullopt, 1e-5f, 2e-4);
  check_layer(transpose(random_array({32, 7}, float32, -1, 1, 5)), random_array({32}),
              slice(random_array({64}, float32, -1, 1, 6), {1}, {64}, {2}));
}

TEST(Fast, NormLargeAndStrided) {
  array x = transpose(random_array({700, 1500}, float32, -1, 1, 1));
  check_layer(x, random_array({700}, float32, -1, 1, 2), random_array({700}, float32, -1, 1, 3));
}

TEST(Fast, NormErrors) {
  EXPECT_THROW(fast::rms_norm(array(1.0f), std::nullopt, 1e-5f), std::invalid_argument);
  EXPECT_THROW(fast::rms_norm(random_array({2, 4}), random_array({2, 4}), 1e-5f),
               std::invalid_argument);
  EXPECT_THROW(fast::rms_norm(random_array({2, 4}), random_array({3}), 1e-5f),
               std::invalid_argument);
  EXPECT_THROW(fast::rms_norm(random_array({2, 4}, int32), std::nullopt, 1e-5f),
               std::invalid_argument);
  EXPECT_THROW(fast::layer_norm(array(1.0f), std::nullopt, std::nullopt, 1e-5f),
               std::invalid_argument);
  EXPECT_THROW(fast::layer_norm(random_array({2, 4}), std::nullopt, random_array({5}), 1e-5f),
               std::invalid_argument);
  EXPECT_THROW(fast::layer_norm(random_array({2, 4}), random_array({1, 4}), std::nullopt, 1e-5f),
               std::invalid_argument);
  EXPECT_THROW(fast::layer_norm(random_array({2, 4}, complex64), std::nullopt, std::nullopt, 1e-5f),
               std::invalid_argument);
  try {
    fast::rms_norm(random_array({2, 4}), random_array({3}), 1e-5f);
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[rms_norm]", 0), 0u) << e.what();
  }
}

// ---------------------------------------------------------------------------- rope

// x: (B, ..., T, D) row-major values; offsets one per batch (or one for all).
std::vector<double> ref_rope(const std::vector<double>& x, const Shape& shape, int dims,
                             bool traditional, double base, double scale,
                             const std::vector<double>& offsets,
                             const std::vector<double>* freqs = nullptr) {
  int D = shape.back(), T = shape[shape.size() - 2], B = shape[0];
  size_t rows = x.size() / D, rows_per_batch = rows / B;
  int half = dims / 2;
  std::vector<double> out = x;
  for (size_t r = 0; r < rows; ++r) {
    double off = offsets.size() == 1 ? offsets[0] : offsets[r / rows_per_batch];
    double pos = (off + static_cast<double>(r % T)) * scale;
    for (int i = 0; i < half; ++i) {
      double inv_freq = freqs ? 1.0 / (*freqs)[i] : std::pow(base, -2.0 * i / dims);
      double th = pos * inv_freq;
      int a = traditional ? 2 * i : i, b = traditional ? 2 * i + 1 : i + half;
      double x1 = x[r * D + a], x2 = x[r * D + b];
      out[r * D + a] = x1 * std::cos(th) - x2 * std::sin(th);
      out[r * D + b] = x1 * std::sin(th) + x2 * std::cos(th);
    }
  }
  return out;
}

TEST(Fast, RoPE) {
  for (Dtype t : test::kFloatDtypes) {
    for (bool trad : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (trad ? " traditional" : ""));
      array x = random_array({2, 3, 7, 16}, t, -1, 1, 1);
      auto xv = to_vector(x);
      expect_close(fast::rope(x, 16, trad, 10000.0f, 1.0f, 0),
                   ref_rope(xv, x.shape(), 16, trad, 10000, 1, {0}), x.shape());
      expect_close(fast::rope(x, 8, trad, 500.0f, 0.5f, 5),
                   ref_rope(xv, x.shape(), 8, trad, 500, 0.5, {5}), x.shape());
      EXPECT_EQ(fast::rope(x, 8, trad, 500.0f, 0.5f, 5).dtype(), t);
    }
  }
}

TEST(Fast, RoPEOffsetsAndFreqs) {
  array x = random_array({3, 2, 5, 12}, float32, -1, 1, 1);
  auto xv = to_vector(x);
  // Array offsets: a scalar, then one per batch entry (any integer type).
  expect_close(fast::rope(x, 12, false, 10000.0f, 1.0f, array(7)),
               ref_rope(xv, x.shape(), 12, false, 10000, 1, {7}), x.shape());
  array offs = array({2, 9, 30}, int64);
  for (bool trad : {false, true}) {
    expect_close(fast::rope(x, 10, trad, 10000.0f, 2.0f, offs),
                 ref_rope(xv, x.shape(), 10, trad, 10000, 2, {2, 9, 30}), x.shape());
  }
  // Custom frequencies.
  std::vector<double> fv = {1.0, 2.5, 7.0, 40.0, 300.0, 1000.0};
  array freqs = test::from_vector(fv, {6});
  for (bool trad : {false, true}) {
    expect_close(fast::rope(x, 12, trad, std::nullopt, 1.0f, 3, freqs),
                 ref_rope(xv, x.shape(), 12, trad, 0, 1, {3}, &fv), x.shape());
  }
  // 3-D input, positions along axis -2.
  array y = random_array({2, 6, 8}, float64, -1, 1, 2);
  expect_close(fast::rope(y, 8, true, 10000.0f, 1.0f, 4),
               ref_rope(to_vector(y), y.shape(), 8, true, 10000, 1, {4}), y.shape());
}

TEST(Fast, RoPELayouts) {
  // (B, T, H, D) transposed to (B, H, T, D), as attention code does.
  array x = transpose(random_array({2, 9, 4, 32}, float32, -1, 1, 1), {0, 2, 1, 3});
  auto xv = to_vector(x);
  for (bool trad : {false, true}) {
    expect_close(fast::rope(x, 32, trad, 10000.0f, 1.0f, 11),
                 ref_rope(xv, x.shape(), 32, trad, 10000, 1, {11}), x.shape());
  }
  // Feature stride != 1 and a broadcast batch.
  array y = slice(random_array({1, 2, 5, 20}, float32, -1, 1, 2), {0, 0, 0, 0}, {1, 2, 5, 20},
                  {1, 1, 1, 2});
  y = broadcast_to(y, {3, 2, 5, 10});
  expect_close(fast::rope(y, 6, false, 10000.0f, 1.0f, array({0, 1, 2})),
               ref_rope(to_vector(y), y.shape(), 6, false, 10000, 1, {0, 1, 2}), y.shape());
  // Large, multithreaded.
  array z = random_array({1, 16, 512, 128}, float32, -1, 1, 3);
  expect_close(fast::rope(z, 128, false, 10000.0f, 1.0f, 0),
               ref_rope(to_vector(z), z.shape(), 128, false, 10000, 1, {0}), z.shape(), 1e-4, 1e-4);
  expect_close(fast::rope(random_array({2, 0, 4}), 4, false, 10000.0f, 1.0f, 0), {}, {2, 0, 4});
}

TEST(Fast, RoPEErrors) {
  array x = random_array({2, 3, 8});
  EXPECT_THROW(fast::rope(random_array({3, 8}), 8, false, 10000.0f, 1.0f, 0),
               std::invalid_argument);
  EXPECT_THROW(fast::rope(x, 7, false, 10000.0f, 1.0f, 0), std::invalid_argument);
  EXPECT_THROW(fast::rope(x, 10, false, 10000.0f, 1.0f, 0), std::invalid_argument);
  EXPECT_THROW(fast::rope(x, 0, false, 10000.0f, 1.0f, 0), std::invalid_argument);
  EXPECT_THROW(fast::rope(x, 8, false, std::nullopt, 1.0f, 0), std::invalid_argument);
  EXPECT_THROW(fast::rope(x, 8, false, 10000.0f, 1.0f, 0, random_array({4})),
               std::invalid_argument);
  EXPECT_THROW(fast::rope(x, 8, false, std::nullopt, 1.0f, 0, random_array({3})),
               std::invalid_argument);
  EXPECT_THROW(fast::rope(x, 8, false, 10000.0f, 1.0f, array(1.5f)), std::invalid_argument);
  EXPECT_THROW(fast::rope(x, 8, false, 10000.0f, 1.0f, array({1, 2, 3})), std::invalid_argument);
  EXPECT_THROW(fast::rope(x, 8, false, 10000.0f, 1.0f, zeros({2, 1}, int32)),
               std::invalid_argument);
  EXPECT_THROW(fast::rope(random_array({2, 3, 8}, int32), 8, false, 10000.0f, 1.0f, 0),
               std::invalid_argument);
}

// ---------------------------------------------------------------------------- attention

struct AttnCase {
  int B = 1, n_q = 2, n_kv = 2, t_q = 5, t_kv = 5, D = 8, Dv = 8;
};

// Naive attention over row-major values. mask: (B, n_q, t_q, t_kv) expanded values, either
// keep-flags (bool_mask) or additive; sinks per query head. Where lse is given, also each row's
// log-sum-exp of its logits (the sink's included; -inf for a row that sees nothing).
std::vector<double> ref_attention(const AttnCase& c, const std::vector<double>& q,
                                  const std::vector<double>& k, const std::vector<double>& v,
                                  double scale, bool causal, const std::vector<double>* mask,
                                  bool bool_mask, const std::vector<double>* sinks,
                                  std::vector<double>* lse = nullptr) {
  std::vector<double> out(size_t(c.B) * c.n_q * c.t_q * c.Dv);
  if (lse)
    lse->assign(size_t(c.B) * c.n_q * c.t_q, 0.0);
  int group = c.n_q / c.n_kv;
  std::vector<double> s(c.t_kv);
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.n_q; ++h)
      for (int i = 0; i < c.t_q; ++i) {
        int hk = h / group;
        double mx = sinks ? (*sinks)[h] : -INFINITY;
        for (int j = 0; j < c.t_kv; ++j) {
          double dot = 0;
          for (int d = 0; d < c.D; ++d)
            dot += q[((size_t(b) * c.n_q + h) * c.t_q + i) * c.D + d] *
                   k[((size_t(b) * c.n_kv + hk) * c.t_kv + j) * c.D + d];
          s[j] = dot * scale;
          if (mask) {
            double m = (*mask)[((size_t(b) * c.n_q + h) * c.t_q + i) * c.t_kv + j];
            s[j] = bool_mask ? (m != 0 ? s[j] : -INFINITY) : s[j] + m;
          }
          if (causal && j > i + c.t_kv - c.t_q)
            s[j] = -INFINITY;
          mx = std::max(mx, s[j]);
        }
        double denom = sinks ? std::exp((*sinks)[h] - mx) : 0;
        for (int j = 0; j < c.t_kv; ++j)
          denom += std::exp(s[j] - mx);
        if (lse)
          (*lse)[(size_t(b) * c.n_q + h) * c.t_q + i] = std::isinf(mx) ? mx : mx + std::log(denom);
        for (int e = 0; e < c.Dv; ++e) {
          double acc = 0;
          for (int j = 0; j < c.t_kv; ++j)
            acc += std::exp(s[j] - mx) * v[((size_t(b) * c.n_kv + hk) * c.t_kv + j) * c.Dv + e];
          out[((size_t(b) * c.n_q + h) * c.t_q + i) * c.Dv + e] =
              std::isinf(mx) ? 0.0 : acc / denom;
        }
      }
  return out;
}

struct AttnInputs {
  array q, k, v;
};

AttnInputs attn_inputs(const AttnCase& c, Dtype t, uint32_t seed = 1) {
  return {random_array({c.B, c.n_q, c.t_q, c.D}, t, -1, 1, seed),
          random_array({c.B, c.n_kv, c.t_kv, c.D}, t, -1, 1, seed + 1),
          random_array({c.B, c.n_kv, c.t_kv, c.Dv}, t, -1, 1, seed + 2)};
}

// Runs attention and compares it with the reference. mask is given unexpanded. With
// `with_lse`, through the fused primitive asked for its lse output, which is checked too.
void check_attention(const AttnCase& c, const AttnInputs& in, const std::string& mode,
                     const std::optional<array>& mask = std::nullopt,
                     const std::optional<array>& sinks = std::nullopt, double rtol = -1,
                     bool with_lse = false) {
  float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  std::vector<array> outs = with_lse ? fast::detail::scaled_dot_product_attention_with_lse(
                                           in.q, in.k, in.v, scale, mode, mask, sinks)
                                     : std::vector<array>{fast::scaled_dot_product_attention(
                                           in.q, in.k, in.v, scale, mode, mask, sinks)};
  const array& out = outs[0];
  EXPECT_EQ(out.shape(), Shape({c.B, c.n_q, c.t_q, c.Dv}));
  std::vector<double> mv, sv, lse;
  if (mask)
    mv = to_vector(broadcast_to(*mask, {c.B, c.n_q, c.t_q, c.t_kv}));
  if (sinks)
    sv = to_vector(*sinks);
  auto ref = ref_attention(c, to_vector(in.q), to_vector(in.k), to_vector(in.v), scale,
                           mode == "causal", mask ? &mv : nullptr, mask && mask->dtype() == bool_,
                           sinks ? &sv : nullptr, &lse);
  expect_close(out, ref, out.shape(), rtol);
  if (with_lse) {
    // float32 whatever the inputs' dtype, from scores formed in the accumulation type (by the
    // CPU kernel; the GPU's composite, for what its fused kernels do not take, forms 16-bit
    // scores in 16 bits).
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(outs[1].dtype(), float32);
    double tol = default_device().type == Device::cpu
                     ? 1e-5
                     : std::max(1e-5, test::default_rtol(in.q.dtype()));
    expect_close(outs[1], lse, {c.B, c.n_q, c.t_q}, tol, tol);
  }
}

// The fused primitive's lse output (what its backward reads on the GPU) against float64
// log-sum-exps: grouped heads, causal rows that see no key (-inf), masks with a fully
// masked row, sinks, no keys, no values; its out is the one-output primitive's.
TEST(Fast, AttentionLse) {
  auto check = [](const AttnCase& c, const AttnInputs& in, const std::string& mode,
                  const std::optional<array>& mask = std::nullopt,
                  const std::optional<array>& sinks = std::nullopt) {
    check_attention(c, in, mode, mask, sinks, -1, true);
  };
  // (Every dtype: AttentionDtypes.) Several key blocks and query tiles; more queries than keys
  // (causal rows 0..69 see none).
  AttnCase longq{1, 8, 2, 150, 80, 16, 8};
  auto inl = attn_inputs(longq, float32, 3);
  check(longq, inl, "causal");
  check(longq, inl, "");
  // Masks (row 2 fully masked: -inf, or the sink's logit with a sink), additive masks, sinks.
  AttnCase m{2, 4, 2, 6, 70, 16, 8};
  auto inm = attn_inputs(m, float32, 5);
  std::vector<bool> keep(6 * 70);
  for (size_t i = 0; i < keep.size(); ++i)
    keep[i] = (i * 7 + i / 70) % 3 != 0 && i / 70 != 2;
  array bmask(keep, {6, 70});
  array sinks = random_array({4}, float32, -1, 2, 6);
  check(m, inm, "array", bmask);
  check(m, inm, "array", bmask, sinks);
  check(m, inm, "array", random_array({1, 4, 6, 70}, float32, -3, 1, 7));
  check(m, inm, "causal", std::nullopt, sinks);
  // No keys: -inf rows, or the sinks' logits; no values: out is empty, lse is not.
  AttnCase nok{1, 2, 2, 3, 0, 8, 8};
  auto ink = attn_inputs(nok, float32);
  check(nok, ink, "");
  check(nok, ink, "causal", std::nullopt, array({0.5f, -1.0f}));
  AttnCase nov{1, 2, 1, 3, 5, 8, 0};
  check(nov, attn_inputs(nov, float32), "causal");
  // The same out as the one-output primitive, bit for bit.
  auto both =
      fast::detail::scaled_dot_product_attention_with_lse(inl.q, inl.k, inl.v, 0.3f, "causal");
  array plain = fast::scaled_dot_product_attention(inl.q, inl.k, inl.v, 0.3f, "causal");
  EXPECT_TRUE(array_equal(both[0], plain).item<bool>());
}

TEST(Fast, AttentionDtypes) {
  AttnCase c{2, 4, 4, 10, 12, 16, 16};
  for (Dtype t : test::kFloatDtypes) {
    SCOPED_TRACE(dtype_name(t));
    auto in = attn_inputs(c, t);
    check_attention(c, in, "");
    check_attention(c, in, "causal");
    check_attention(c, in, "causal", std::nullopt, std::nullopt, -1, /*with_lse=*/true);
    EXPECT_EQ(fast::scaled_dot_product_attention(in.q, in.k, in.v, 0.25f).dtype(), t);
  }
}

TEST(Fast, AttentionGQAAndShapes) {
  // Grouped-query attention, different value width.
  AttnCase gqa{2, 8, 2, 7, 9, 16, 24};
  check_attention(gqa, attn_inputs(gqa, float32), "");
  check_attention(gqa, attn_inputs(gqa, float32), "causal");
  // Multi-query, decode step (one query).
  AttnCase mqa{3, 6, 1, 1, 33, 32, 32};
  check_attention(mqa, attn_inputs(mqa, float32), "");
  check_attention(mqa, attn_inputs(mqa, float32), "causal");
  // Causal with fewer queries than keys: bottom-right aligned.
  AttnCase shortq{1, 2, 2, 3, 10, 8, 8};
  check_attention(shortq, attn_inputs(shortq, float64), "causal");
  // More queries than keys: the first rows see no key and are zeros.
  AttnCase longq{1, 1, 1, 6, 3, 8, 8};
  auto in = attn_inputs(longq, float32);
  check_attention(longq, in, "causal");
  array o = fast::scaled_dot_product_attention(in.q, in.k, in.v, 0.3f, "causal");
  EXPECT_EQ(to_vector(o)[0], 0.0);
  EXPECT_NE(to_vector(o)[3 * 8], 0.0);  // the first row that sees a key
  // Size 1 everywhere, odd widths.
  AttnCase tiny{1, 1, 1, 1, 1, 1, 3};
  check_attention(tiny, attn_inputs(tiny, float32), "causal");
  AttnCase odd{1, 3, 3, 5, 70, 13, 5};
  check_attention(odd, attn_inputs(odd, float32), "");
}

TEST(Fast, AttentionLongSequences) {
  // Several key blocks and query tiles, causal skipping, many tasks across threads.
  AttnCase c{2, 4, 2, 150, 200, 64, 64};
  auto in = attn_inputs(c, float32);
  check_attention(c, in, "causal");
  check_attention(c, in, "");
  AttnCase h{1, 2, 2, 130, 130, 32, 32};
  check_attention(h, attn_inputs(h, bfloat16), "causal");
}

TEST(Fast, AttentionMasks) {
  AttnCase c{2, 4, 2, 6, 70, 16, 16};
  auto in = attn_inputs(c, float32);
  // Boolean (T_q, T_kv) mask, broadcast over batch and heads; one fully masked row.
  std::vector<bool> keep(6 * 70);
  for (size_t i = 0; i < keep.size(); ++i)
    keep[i] = (i * 7 + i / 70) % 3 != 0;
  for (int j = 0; j < 70; ++j)
    keep[2 * 70 + j] = false;
  array bmask(keep, {6, 70});
  check_attention(c, in, "array", bmask);
  check_attention(c, in, "", bmask);  // "" with a mask array uses it
  // Additive per-head mask (1, N_q, T_q, T_kv), float16 promotes to float32.
  array amask = random_array({1, 4, 6, 70}, float32, -3, 1, 9);
  check_attention(c, in, "array", amask);
  check_attention(c, in, "array", astype(amask, float16));
  // -inf entries in an additive mask.
  array ninf =
      where(random_array({6, 70}, float32, 0, 1, 10) < array(0.3f), array(-INFINITY), array(0.0f));
  check_attention(c, in, "array", ninf);
  // Mask with a transposed layout and a batch-only mask.
  check_attention(c, in, "array", transpose(random_array({70, 6}, float32, -1, 1, 11)));
  check_attention(c, in, "array", reshape(array({true, false}), {2, 1, 1, 1}));
  // Sinks, with and without a mask.
  array sinks = random_array({4}, float32, -1, 2, 12);
  check_attention(c, in, "", std::nullopt, sinks);
  check_attention(c, in, "array", bmask, sinks);
  check_attention(c, in, "causal", std::nullopt, sinks);
}

TEST(Fast, AttentionLayoutsAndEmpty) {
  // (B, T, N, D) transposed to (B, N, T, D); keys sliced with a step along T.
  AttnCase c{2, 4, 2, 9, 11, 16, 16};
  AttnInputs in{transpose(random_array({2, 9, 4, 16}, float32, -1, 1, 1), {0, 2, 1, 3}),
                slice(random_array({2, 2, 22, 16}, float32, -1, 1, 2), {0, 0, 0, 0}, {2, 2, 22, 16},
                      {1, 1, 2, 1}),
                slice(random_array({2, 2, 11, 32}, float32, -1, 1, 3), {0, 0, 0, 31},
                      {2, 2, 11, -33}, {1, 1, 1, -2})};
  check_attention(c, in, "causal");
  // Mixed dtypes promote.
  AttnInputs mixed{astype(in.q, float16), in.k, in.v};
  array o = fast::scaled_dot_product_attention(mixed.q, mixed.k, mixed.v, 0.25f);
  EXPECT_EQ(o.dtype(), float32);
  // Empty query sequence, empty key sequence or a sink with no keys: zeros.
  AttnCase noq{1, 2, 2, 0, 4, 8, 8};
  check_attention(noq, attn_inputs(noq, float32), "");
  AttnCase nok{1, 2, 2, 3, 0, 8, 8};
  auto ink = attn_inputs(nok, float32);
  check_attention(nok, ink, "");
  array sunk = fast::scaled_dot_product_attention(ink.q, ink.k, ink.v, 1.0f, "", std::nullopt,
                                                  array({0.5f, 1.0f}));
  expect_close(sunk, std::vector<double>(48, 0.0), {1, 2, 3, 8});
}

TEST(Fast, AttentionErrors) {
  array q = random_array({1, 4, 3, 8}), k = random_array({1, 2, 5, 8}),
        v = random_array({1, 2, 5, 8});
  auto sdpa = [](const array& q, const array& k, const array& v, const std::string& mode = "",
                 std::optional<array> mask = std::nullopt,
                 const std::optional<array>& sinks = std::nullopt) {
    return fast::scaled_dot_product_attention(q, k, v, 1.0f, mode, mask, sinks);
  };
  EXPECT_THROW(sdpa(random_array({4, 3, 8}), k, v), std::invalid_argument);
  EXPECT_THROW(sdpa(q, random_array({1, 3, 5, 8}), random_array({1, 3, 5, 8})),
               std::invalid_argument);
  EXPECT_THROW(sdpa(q, random_array({1, 2, 5, 7}), v), std::invalid_argument);
  EXPECT_THROW(sdpa(q, k, random_array({1, 2, 4, 8})), std::invalid_argument);
  EXPECT_THROW(sdpa(q, random_array({2, 2, 5, 8}), random_array({2, 2, 5, 8})),
               std::invalid_argument);
  EXPECT_THROW(sdpa(astype(q, int32), astype(k, int32), astype(v, int32)), std::invalid_argument);
  EXPECT_THROW(sdpa(q, k, v, "bogus"), std::invalid_argument);
  EXPECT_THROW(sdpa(q, k, v, "causal", random_array({3, 5})), std::invalid_argument);
  EXPECT_THROW(sdpa(q, k, v, "array"), std::invalid_argument);
  EXPECT_THROW(sdpa(q, k, v, "array", random_array({3, 4})), std::invalid_argument);
  EXPECT_THROW(sdpa(q, k, v, "array", random_array({1, 1, 1, 3, 5})), std::invalid_argument);
  EXPECT_THROW(sdpa(astype(q, float16), astype(k, float16), astype(v, float16), "array",
                    random_array({3, 5})),
               std::invalid_argument);
  EXPECT_THROW(sdpa(q, k, v, "", std::nullopt, random_array({2})), std::invalid_argument);
  try {
    sdpa(q, k, v, "bogus");
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[scaled_dot_product_attention]", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace mlx::core
