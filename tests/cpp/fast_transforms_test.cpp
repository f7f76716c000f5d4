// Transform rules of the fused fast:: primitives: derivatives against finite differences and
// naive float64 backward passes, vmap against loops.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "mlx/mlx.h"
#include "mlx/primitives/fast.h"
#include "mlx/primitives/primitive.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

constexpr float kEps = 1e-5f;

// A vjp of f as a function of (primals..., cotangent), for vmap checks of the backward rules.
ArrayFn vjp_fn(ArrayFn f, int n_primals) {
  return [f, n_primals](const std::vector<array>& in) {
    std::vector<array> primals(in.begin(), in.begin() + n_primals);
    return vjp(f, primals, {in.back()}).second;
  };
}

bool made_by(const array& a, const std::string& name) {
  return a.has_primitive() && a.primitive().name() == name;
}

// ---------------------------------------------------------------------------- norms

// {x, weight?, bias?} -> norm. Only the parameters present are inputs.
ArrayFn rms_fn(bool weight) {
  return [weight](const std::vector<array>& in) {
    return std::vector<array>{
        fast::rms_norm(in[0], weight ? std::optional<array>(in[1]) : std::nullopt, kEps)};
  };
}

ArrayFn layer_fn(bool weight, bool bias) {
  return [weight, bias](const std::vector<array>& in) {
    std::optional<array> w, b;
    if (weight)
      w = in[1];
    if (bias)
      b = in[1 + weight];
    return std::vector<array>{fast::layer_norm(in[0], w, b, kEps)};
  };
}

// Naive float64 norm backward over rows of d: dx, and the weight and bias gradients.
struct NormGrads {
  std::vector<double> dx, dw, db;
};

NormGrads ref_norm_vjp(const std::vector<double>& x, const std::vector<double>& g,
                       const std::vector<double>* w, int d, bool layer) {
  NormGrads r{std::vector<double>(x.size()), std::vector<double>(d), std::vector<double>(d)};
  for (size_t row = 0; row < x.size() / d; ++row) {
    const double* xr = x.data() + row * d;
    const double* gr = g.data() + row * d;
    double mean = 0, var = 0, mgw = 0, mgx = 0;
    for (int i = 0; layer && i < d; ++i)
      mean += xr[i] / d;
    for (int i = 0; i < d; ++i)
      var += (xr[i] - mean) * (xr[i] - mean) / d;
    double rs = 1 / std::sqrt(var + kEps);
    for (int i = 0; i < d; ++i) {
      double gw = gr[i] * (w ? (*w)[i] : 1.0);
      mgw += layer ? gw / d : 0;
      mgx += gw * (xr[i] - mean) * rs / d;
    }
    for (int i = 0; i < d; ++i) {
      double xhat = (xr[i] - mean) * rs;
      double gw = gr[i] * (w ? (*w)[i] : 1.0);
      r.dx[row * d + i] = rs * (gw - mgw - xhat * mgx);
      r.dw[i] += gr[i] * xhat;
      r.db[i] += gr[i];
    }
  }
  return r;
}

void check_norm_vjp(const array& x, const array& w, const array& g, bool layer, double rtol) {
  SCOPED_TRACE(std::string(layer ? "layer_norm " : "rms_norm ") + dtype_name(x.dtype()));
  std::vector<array> primals = {x, w};
  if (layer)
    primals.push_back(w);  // the bias: any (D,) values
  auto grads = vjp(layer ? layer_fn(true, true) : rms_fn(true), primals, {g}).second;
  EXPECT_TRUE(made_by(grads[0], layer ? "LayerNormVJP" : "RMSNormVJP"));
  auto wv = to_vector(w);
  auto ref = ref_norm_vjp(to_vector(x), to_vector(g), &wv, x.shape(-1), layer);
  expect_close(grads[0], ref.dx, x.shape(), rtol, rtol);
  expect_close(grads[1], ref.dw, w.shape(), rtol, rtol);
  if (layer)
    expect_close(grads[2], ref.db, w.shape(), rtol, rtol);
}

TEST(FastRules, RMSNormGrad) {
  for (Shape shape : {Shape{3, 5}, Shape{2, 3, 4}, Shape{6}, Shape{4, 1}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    array x = random_array(shape, float64, -1, 1, 1);
    array w = random_array({shape.back()}, float64, 0.5, 1.5, 2);
    check_grad(rms_fn(true), {x, w});
    check_grad(rms_fn(false), {x});
  }
  // Transposed rows and a broadcast input, made inside f.
  auto transposed = [](const std::vector<array>& in) {
    return std::vector<array>{fast::rms_norm(transpose(in[0]), in[1], kEps)};
  };
  check_grad(transposed, {random_array({5, 3}, float64, -1, 1, 3), random_array({5}, float64)});
  auto broadcast = [](const std::vector<array>& in) {
    return std::vector<array>{fast::rms_norm(broadcast_to(in[0], {3, 4}), in[1], kEps)};
  };
  check_grad(broadcast, {random_array({4}, float64, -1, 1, 4), random_array({4}, float64)});
  // float32 kernels with the default looser tolerances.
  check_grad(rms_fn(true), {random_array({3, 7}, float32, -1, 1, 5), random_array({7})});
}

TEST(FastRules, LayerNormGrad) {
  for (Shape shape : {Shape{3, 5}, Shape{2, 2, 4}, Shape{7}, Shape{3, 1}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    array x = random_array(shape, float64, -1, 1, 1);
    array w = random_array({shape.back()}, float64, 0.5, 1.5, 2);
    array b = random_array({shape.back()}, float64, -1, 1, 3);
    check_grad(layer_fn(true, true), {x, w, b});
    check_grad(layer_fn(true, false), {x, w});
    check_grad(layer_fn(false, true), {x, b});
    check_grad(layer_fn(false, false), {x});
  }
  auto strided = [](const std::vector<array>& in) {
    array x = slice(transpose(in[0]), {0, 0}, {4, 6}, {1, 2});
    return std::vector<array>{fast::layer_norm(x, in[1], in[2], kEps)};
  };
  check_grad(strided, {random_array({6, 4}, float64, -1, 1, 4), random_array({3}, float64),
                       random_array({3}, float64, -1, 1, 5)});
  check_grad(layer_fn(true, true),
             {random_array({2, 9}, float32, -1, 1, 6), random_array({9}), random_array({9})});
}

TEST(FastRules, NormVjpKernels) {
  for (Dtype t : kFloatDtypes) {
    double rtol = t == float64 ? 1e-10 : t == float32 ? 1e-4 : t == float16 ? 1e-2 : 5e-2;
    array x = random_array({3, 5, 67}, t, -2, 2, 1);
    array w = random_array({67}, t, -1, 1, 2);
    array g = random_array({3, 5, 67}, t, -1, 1, 3);
    check_norm_vjp(x, w, g, false, rtol);
    check_norm_vjp(x, w, g, true, rtol);
  }
  // Non-contiguous cotangent and input, negative strides.
  array x = slice(random_array({8, 40}, float32, -1, 1, 4), {7, 39}, {-9, -41}, {-1, -2});
  array g = transpose(random_array({20, 8}, float32, -1, 1, 5));
  array w = random_array({20}, float32, -1, 1, 6);
  check_norm_vjp(x, w, g, false, 1e-4);
  check_norm_vjp(x, w, g, true, 1e-4);
  // Large enough for several parts (threads) in the weight sums.
  array big = random_array({1100, 1024}, float32, -1, 1, 7);
  array gbig = random_array({1100, 1024}, float32, -1, 1, 8);
  array wbig = random_array({1024}, float32, -1, 1, 9);
  check_norm_vjp(big, wbig, gbig, false, 1e-3);
  check_norm_vjp(big, wbig, gbig, true, 1e-3);
  // No rows: zero parameter gradients.
  auto grads = vjp(layer_fn(true, true), {zeros({0, 4}), ones({4}), ones({4})}, {zeros({0, 4})});
  expect_close(grads.second[0], {}, {0, 4});
  expect_close(grads.second[1], {0, 0, 0, 0});
  expect_close(grads.second[2], {0, 0, 0, 0});
}

TEST(FastRules, NormVmap) {
  array x = random_array({3, 4, 5}, float32, -1, 1, 1);
  array w = random_array({5}, float32, 0.5, 1.5, 2);
  array wb = random_array({3, 5}, float32, 0.5, 1.5, 3);
  array b = random_array({5}, float32, -1, 1, 4);
  array bb = random_array({5, 3}, float32, -1, 1, 5);
  check_vmap(rms_fn(true), {x, w}, {0, -1});
  check_vmap(rms_fn(true), {x, w}, {1, -1}, {1});
  check_vmap(rms_fn(true), {x, wb}, {0, 0});
  check_vmap(rms_fn(true), {take(x, 0, 0), wb}, {-1, 0});
  check_vmap(rms_fn(false), {x}, {2}, {2});
  check_vmap(layer_fn(true, true), {x, w, b}, {1, -1, -1});
  check_vmap(layer_fn(true, true), {x, wb, b}, {0, 0, -1});
  check_vmap(layer_fn(true, true), {x, w, bb}, {0, -1, 1});
  check_vmap(layer_fn(true, true), {take(x, 1, 0), wb, bb}, {-1, 0, 1}, {1});
  check_vmap(layer_fn(false, true), {x, bb}, {0, 1}, {2});
}

TEST(FastRules, NormVmapOfVjp) {
  array x = random_array({3, 4, 5}, float32, -1, 1, 1);
  array w = random_array({5}, float32, 0.5, 1.5, 2);
  array wb = random_array({3, 5}, float32, 0.5, 1.5, 3);
  array g = random_array({3, 4, 5}, float32, -1, 1, 4);
  // The same batch of three along axis 1.
  array x1 = moveaxis(x, 0, 1), g1 = moveaxis(g, 0, 1);
  auto rms = vjp_fn(rms_fn(true), 2);
  check_vmap(rms, {x, w, g}, {0, -1, 0});
  check_vmap(rms, {x1, wb, g1}, {1, 0, 1});
  check_vmap(rms, {take(x, 0, 0), w, g}, {-1, -1, 0}, {1, 0});
  auto layer = vjp_fn(layer_fn(true, true), 3);
  check_vmap(layer, {x, w, w, g}, {0, -1, -1, 0});
  check_vmap(layer, {x1, wb, w, g}, {1, 0, -1, 0}, {0, 1, 0});
  check_vmap(vjp_fn(layer_fn(false, false), 1), {x1, take(g, 0, 0)}, {1, -1});
}

TEST(FastRules, NormVjpMemory) {
  // dx is the only (rows x D) allocation of the backward (1 MiB here).
  array x = random_array({1024, 256}, float32, -1, 1, 1);
  array w = random_array({256}, float32, -1, 1, 2);
  array g = random_array({1024, 256}, float32, -1, 1, 3);
  eval({x, w, g});
  for (bool layer : {false, true}) {
    auto grads = layer ? vjp(layer_fn(true, true), {x, w, w}, {g}).second
                       : vjp(rms_fn(true), {x, w}, {g}).second;
    size_t base = get_active_memory();
    reset_peak_memory();
    eval(grads);
    // dx (1 MiB) and the per-block partial sums of dw (and db) where a backend keeps them (at
    // most a row of D floats per resident block: 0.5 MiB on an H200); a second rows x D
    // temporary would pass 2 MiB.
    EXPECT_LT(get_peak_memory() - base, size_t(2) << 20);
  }
}

// ---------------------------------------------------------------------------- rope

// x -> rope(x) with a fixed offset and base, or frequencies as a second (constant) input.
ArrayFn rope_fn(int dims, bool trad, int offset = 0) {
  return [=](const std::vector<array>& in) {
    return std::vector<array>{fast::rope(in[0], dims, trad, 100.0f, 0.7f, offset)};
  };
}

TEST(FastRules, RoPEGrad) {
  for (bool trad : {false, true}) {
    SCOPED_TRACE(trad ? "traditional" : "halves");
    array x = random_array({2, 3, 4}, float64, -1, 1, 1);
    check_grad(rope_fn(4, trad), {x});
    check_grad(rope_fn(2, trad, 3), {x});  // features past dims pass through
    // Offsets per batch entry (an integer input: no gradient).
    auto per_batch = [trad](const std::vector<array>& in) {
      return std::vector<array>{fast::rope(in[0], 4, trad, 100.0f, 1.0f, in[1])};
    };
    check_grad(per_batch, {x, array({1, 5})});
    // Custom frequencies, held constant.
    auto with_freqs = [trad](const std::vector<array>& in) {
      return std::vector<array>{fast::rope(in[0], 4, trad, std::nullopt, 1.0f, 2, in[1])};
    };
    GradCheckOptions only_x;
    only_x.argnums = {0};
    check_grad(with_freqs, {x, array({1.0f, 3.0f})}, only_x);
    // Transposed input (B, D, T) -> (B, T, D).
    auto transposed = [trad](const std::vector<array>& in) {
      return std::vector<array>{fast::rope(swapaxes(in[0], 1, 2), 4, trad, 10.0f, 1.0f, 1)};
    };
    check_grad(transposed, {random_array({2, 4, 3}, float64, -1, 1, 2)});
    check_grad(rope_fn(4, trad, 1), {random_array({1, 3, 4}, float32, -1, 1, 3)});
  }
}

TEST(FastRules, RoPEVjpIsInverseRotation) {
  array x = random_array({2, 3, 5, 8}, float32, -1, 1, 1);
  auto f = rope_fn(8, false, 4);
  array y = f({x})[0];
  // The rotation is orthogonal: pulling its output back gives the input again.
  auto back = vjp(f, {x}, {y}).second[0];
  expect_close(back, to_vector(x), x.shape(), 1e-5, 1e-5);
  // Frequencies get no gradient.
  auto with_freqs = [](const std::vector<array>& in) {
    return std::vector<array>{fast::rope(in[0], 4, true, std::nullopt, 1.0f, 0, in[1])};
  };
  auto grads = vjp(with_freqs, {x, array({2.0f, 5.0f})}, {ones_like(x)}).second;
  expect_close(grads[1], {0, 0});
}

TEST(FastRules, RoPEVmap) {
  array x = random_array({3, 2, 4, 6}, float32, -1, 1, 1);
  for (bool trad : {false, true}) {
    SCOPED_TRACE(trad ? "traditional" : "halves");
    check_vmap(rope_fn(6, trad, 2), {x}, {0});
    check_vmap(rope_fn(4, trad, 2), {x}, {2}, {1});
    check_vmap(rope_fn(4, trad), {x}, {3}, {3});
    // Offsets: mapped scalars, mapped per-batch vectors, unmapped per-batch vectors.
    auto f = [trad](const std::vector<array>& in) {
      return std::vector<array>{fast::rope(in[0], 6, trad, 50.0f, 1.0f, in[1])};
    };
    check_vmap(f, {x, array({0, 7, 3})}, {0, 0});
    check_vmap(f, {x, array({0, 7, 3, 1, 2, 9}, {2, 3})}, {0, 1});
    check_vmap(f, {x, array({4, 1, 8})}, {1, -1}, {2});
    check_vmap(f, {take(x, 0, 0), array({3, 1, 4}, {3, 1})}, {-1, 0});
  }
}

// ---------------------------------------------------------------------------- attention

using fast::detail::AttentionLse;

// Sets where the fused attention primitive outputs lse (fast::detail::AttentionLse) while alive.
class LseMode {
 public:
  explicit LseMode(AttentionLse mode) : previous_(fast::detail::attention_lse()) {
    fast::detail::set_attention_lse(mode);
  }
  ~LseMode() { fast::detail::set_attention_lse(previous_); }
  LseMode(const LseMode&) = delete;
  LseMode& operator=(const LseMode&) = delete;

 private:
  AttentionLse previous_;
};

// Runs `body` with the traced forwards' lse off and on, on every stream: the fused backward
// then gets the forward's lse, which must change no value and no rule.
void with_and_without_lse(const std::function<void()>& body) {
  for (AttentionLse mode : {AttentionLse::never, AttentionLse::always}) {
    SCOPED_TRACE(mode == AttentionLse::always ? "forward with lse" : "forward without lse");
    LseMode scope(mode);
    body();
  }
}

struct AttnCase {
  int B = 1, n_q = 2, n_kv = 2, t_q = 3, t_kv = 4, D = 4, Dv = 3;
};

// {q, k, v, sinks?} -> attention with a constant mask.
ArrayFn attn_fn(const std::string& mode, std::optional<array> mask = std::nullopt,
                bool sinks = false, float scale = 0.6f) {
  return [=](const std::vector<array>& in) {
    std::optional<array> s;
    if (sinks)
      s = in[3];
    return std::vector<array>{
        fast::scaled_dot_product_attention(in[0], in[1], in[2], scale, mode, mask, s)};
  };
}

std::vector<array> attn_inputs(const AttnCase& c, Dtype t, uint32_t seed = 1) {
  return {random_array({c.B, c.n_q, c.t_q, c.D}, t, -1, 1, seed),
          random_array({c.B, c.n_kv, c.t_kv, c.D}, t, -1, 1, seed + 1),
          random_array({c.B, c.n_kv, c.t_kv, c.Dv}, t, -1, 1, seed + 2)};
}

// Derivative checks through the fused backward (vjp) and the composite forward (jvp).
GradCheckOptions attn_opts(std::vector<int> argnums = {}) {
  GradCheckOptions o;
  o.argnums = std::move(argnums);
  return o;
}

TEST(FastRules, AttentionGrad) {
  with_and_without_lse([&] {
    AttnCase c;
    auto in = attn_inputs(c, float64);
    check_grad(attn_fn(""), in, attn_opts());
    check_grad(attn_fn("causal"), in, attn_opts());
    // Grouped-query attention, more queries than keys.
    AttnCase gqa{1, 4, 1, 3, 2, 2, 3};
    check_grad(attn_fn(""), attn_inputs(gqa, float64, 2), attn_opts());
    // Boolean mask (every row keeps a key) and additive mask; masks are constants.
    array keep = array(
        {true, false, true, true, false, true, false, false, true, true, true, false}, {3, 4});
    check_grad(attn_fn("array", keep), in, attn_opts());
    array bias = random_array({1, 2, 3, 4}, float64, -2, 1, 7);
    check_grad(attn_fn("array", bias), in, attn_opts());
    // Sinks are differentiable inputs.
    auto with_sinks = in;
    with_sinks.push_back(random_array({2}, float64, -1, 1, 8));
    check_grad(attn_fn("", std::nullopt, true), with_sinks, attn_opts());
    check_grad(attn_fn("causal", std::nullopt, true), with_sinks, attn_opts());
    // Transposed queries (B, T, N, D) and a batch of two.
    auto transposed = [](const std::vector<array>& x) {
      return attn_fn("causal")({swapaxes(x[0], 1, 2), x[1], x[2]});
    };
    AttnCase b2{2, 2, 1, 2, 3, 2, 2};
    auto in2 = attn_inputs(b2, float64, 3);
    in2[0] = swapaxes(in2[0], 1, 2);
    check_grad(transposed, {contiguous(in2[0]), in2[1], in2[2]}, attn_opts());
    check_grad(attn_fn(""), attn_inputs(c, float32, 4), attn_opts());
  });
}

TEST(FastRules, AttentionMaskGetsNoGradient) {
  with_and_without_lse([&] {
    AttnCase c;
    auto in = attn_inputs(c, float32);
    in.push_back(random_array({1, 2, 3, 4}, float32, -1, 1, 5));
    auto f = [](const std::vector<array>& x) {
      return std::vector<array>{
          fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.5f, "array", x[3])};
    };
    auto grads = vjp(f, in, {ones({1, 2, 3, 3})}).second;
    expect_close(grads[3], std::vector<double>(24, 0.0), {1, 2, 3, 4});
    if (default_device().type == Device::cpu) {  // the GPU runs the composite (no fused kernel yet)
      EXPECT_TRUE(made_by(grads[0], "ScaledDotProductAttentionVJP"));
    }
  });
}

// Naive float64 attention backward. mask: expanded (B, n_q, t_q, t_kv) keep-flags or additive.
struct AttnGrads {
  std::vector<double> dq, dk, dv, dsinks;
};

AttnGrads ref_attention_vjp(const AttnCase& c, const std::vector<double>& q,
                            const std::vector<double>& k, const std::vector<double>& v,
                            const std::vector<double>& d_o, double scale, bool causal,
                            const std::vector<double>* mask, bool bool_mask,
                            const std::vector<double>* sinks) {
  AttnGrads g{std::vector<double>(q.size()), std::vector<double>(k.size()),
              std::vector<double>(v.size()), std::vector<double>(c.n_q)};
  int group = c.n_q / c.n_kv;
  std::vector<double> p(c.t_kv), o(c.Dv);
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.n_q; ++h)
      for (int i = 0; i < c.t_q; ++i) {
        size_t qi = (size_t(b) * c.n_q + h) * c.t_q + i;
        auto krow = [&](int j) { return ((size_t(b) * c.n_kv + h / group) * c.t_kv + j); };
        double mx = sinks ? (*sinks)[h] : -INFINITY;
        for (int j = 0; j < c.t_kv; ++j) {
          double dot = 0;
          for (int d = 0; d < c.D; ++d)
            dot += q[qi * c.D + d] * k[krow(j) * c.D + d];
          p[j] = dot * scale;
          if (mask) {
            double m = (*mask)[qi * c.t_kv + j];
            p[j] = bool_mask ? (m != 0 ? p[j] : -INFINITY) : p[j] + m;
          }
          if (causal && j > i + c.t_kv - c.t_q)
            p[j] = -INFINITY;
          mx = std::max(mx, p[j]);
        }
        double p_sink = sinks ? std::exp((*sinks)[h] - mx) : 0, denom = p_sink;
        for (int j = 0; j < c.t_kv; ++j)
          denom += p[j] = std::exp(p[j] - mx);
        p_sink /= denom;
        std::fill(o.begin(), o.end(), 0.0);
        for (int j = 0; j < c.t_kv; ++j) {
          p[j] /= denom;
          for (int e = 0; e < c.Dv; ++e)
            o[e] += p[j] * v[krow(j) * c.Dv + e];
        }
        double drow = 0;
        for (int e = 0; e < c.Dv; ++e)
          drow += d_o[qi * c.Dv + e] * o[e];
        g.dsinks[h] -= p_sink * drow;
        for (int j = 0; j < c.t_kv; ++j) {
          double dp = 0;
          for (int e = 0; e < c.Dv; ++e) {
            dp += d_o[qi * c.Dv + e] * v[krow(j) * c.Dv + e];
            g.dv[krow(j) * c.Dv + e] += p[j] * d_o[qi * c.Dv + e];
          }
          double ds = p[j] * (dp - drow) * scale;
          for (int d = 0; d < c.D; ++d) {
            g.dq[qi * c.D + d] += ds * k[krow(j) * c.D + d];
            g.dk[krow(j) * c.D + d] += ds * q[qi * c.D + d];
          }
        }
      }
  return g;
}

// The fused backward against the naive one. mask given unexpanded.
void check_attention_vjp(const AttnCase& c, Dtype t, const std::string& mode,
                         const std::optional<array>& mask = std::nullopt, bool sinks = false,
                         double rtol = -1) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " mode '" + mode + "'" + (mask ? " mask" : "") +
               (sinks ? " sinks" : ""));
  if (rtol < 0)
    rtol = t == float64 ? 1e-10 : t == float32 ? 2e-4 : t == float16 ? 2e-2 : 8e-2;
  float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  auto in = attn_inputs(c, t, 11);
  if (sinks)
    in.push_back(random_array({c.n_q}, t, -1, 2, 15));
  array d_o = random_array({c.B, c.n_q, c.t_q, c.Dv}, t, -1, 1, 16);
  auto grads = vjp(attn_fn(mode, mask, sinks, scale), in, {d_o}).second;
  std::vector<double> mv, sv;
  if (mask)
    mv = to_vector(broadcast_to(*mask, {c.B, c.n_q, c.t_q, c.t_kv}));
  if (sinks)
    sv = to_vector(in[3]);
  auto ref = ref_attention_vjp(c, to_vector(in[0]), to_vector(in[1]), to_vector(in[2]),
                               to_vector(d_o), scale, mode == "causal", mask ? &mv : nullptr,
                               mask && mask->dtype() == bool_, sinks ? &sv : nullptr);
  // Gradients are sums of many terms: compare relative to their scale.
  auto close = [&](const array& got, const std::vector<double>& want) {
    double mag = 0;
    for (double w : want)
      mag = std::max(mag, std::abs(w));
    expect_close(got, want, got.shape(), rtol, rtol * std::max(mag, 1.0));
  };
  close(grads[0], ref.dq);
  close(grads[1], ref.dk);
  close(grads[2], ref.dv);
  if (sinks)
    close(grads[3], ref.dsinks);
}

TEST(FastRules, AttentionVjpKernel) {
  with_and_without_lse([&] {
    AttnCase c{2, 4, 2, 10, 12, 16, 16};
    for (Dtype t : kFloatDtypes) {
      check_attention_vjp(c, t, "");
      check_attention_vjp(c, t, "causal", std::nullopt, true);
    }
    // Several key blocks and query tiles; feature widths that are not multiples of 8 (per-thread
    // accumulators) and that are (accumulation in the outputs).
    check_attention_vjp({2, 4, 2, 70, 150, 20, 12}, float32, "causal");
    check_attention_vjp({2, 4, 2, 70, 150, 16, 24}, float32, "");
    check_attention_vjp({1, 8, 1, 40, 130, 8, 8}, float64, "causal", std::nullopt, true);
    check_attention_vjp({1, 2, 2, 130, 70, 16, 16}, bfloat16, "");
    // Masks: boolean with a fully masked row (a sink keeps it finite), additive per head.
    AttnCase m{2, 4, 2, 6, 70, 16, 8};
    std::vector<bool> keep(6 * 70);
    for (size_t i = 0; i < keep.size(); ++i)
      keep[i] = (i * 7 + i / 70) % 3 != 0 && i / 70 != 2;
    check_attention_vjp(m, float32, "array", array(keep, {6, 70}), true);
    check_attention_vjp(m, float32, "array", random_array({1, 4, 6, 70}, float32, -3, 1, 9));
    check_attention_vjp(m, float64, "array", transpose(random_array({70, 6}, float64, -1, 1, 10)));
    // Decode step, size-1 everything.
    check_attention_vjp({3, 6, 1, 1, 33, 32, 32}, float32, "causal");
    check_attention_vjp({1, 1, 1, 1, 1, 1, 1}, float32, "");
  });
}

TEST(FastRules, AttentionVjpEdgeCases) {
  with_and_without_lse([&] {
    // Rows that see no key and have no sink are zeros in the forward and in dq.
    AttnCase c{1, 1, 1, 4, 2, 4, 4};
    auto in = attn_inputs(c, float32);
    auto grads = vjp(attn_fn("causal"), in, {ones({1, 1, 4, 4})}).second;
    auto dq = to_vector(grads[0]);
    EXPECT_EQ(dq[0], 0.0);
    EXPECT_FALSE(std::isnan(dq.back()));
    EXPECT_NE(dq.back(), 0.0);
    // No keys: empty dk, dv; with a sink the output is zeros and every gradient vanishes.
    AttnCase nok{1, 2, 2, 3, 0, 4, 4};
    auto ink = attn_inputs(nok, float32);
    ink.push_back(array({0.5f, -1.0f}));
    auto g0 = vjp(attn_fn("", std::nullopt, true), ink, {ones({1, 2, 3, 4})}).second;
    expect_close(g0[0], std::vector<double>(24, 0.0), {1, 2, 3, 4});
    expect_close(g0[1], {}, {1, 2, 0, 4});
    expect_close(g0[3], {0, 0});
    // No queries: zero dk and dv.
    AttnCase noq{1, 2, 1, 0, 3, 4, 4};
    auto g1 = vjp(attn_fn(""), attn_inputs(noq, float32), {zeros({1, 2, 0, 4})}).second;
    expect_close(g1[1], std::vector<double>(12, 0.0), {1, 1, 3, 4});
    expect_close(g1[2], std::vector<double>(12, 0.0), {1, 1, 3, 4});
  });
}

TEST(FastRules, AttentionVjpMemory) {
  // The backward never allocates a (T_q x T_kv) array: the scores per head would take 4 MiB
  // here, the inputs, output and gradients 128 KiB each.
  if (default_device().type != Device::cpu) {
    GTEST_SKIP()
        << "the GPU runs the composite, which holds the scores (issue 13: flash attention)";
  }
  AttnCase c{1, 2, 2, 1024, 1024, 16, 16};
  auto in = attn_inputs(c, float32);
  array d_o = random_array({1, 2, 1024, 16}, float32, -1, 1, 4);
  eval(in);
  eval(d_o);
  auto grads = vjp(attn_fn("causal"), in, {d_o}).second;
  size_t base = get_active_memory();
  reset_peak_memory();
  eval(grads);
  EXPECT_LT(get_peak_memory() - base, size_t(2) << 20);
}

TEST(FastRules, AttentionPrimitivesRunOnTheGpu) {
  // The op layer builds the composite on GPU streams; primitives made on the host (an imported
  // function, say) still run on a GPU stream, as their composites' GPU kernels.
  if (!is_available(Device::gpu)) {
    GTEST_SKIP() << "no GPU";
  }
  Stream cpu = default_stream(Device::cpu), gpu = default_stream(Device::gpu);
  auto in = attn_inputs(AttnCase{2, 4, 2, 3, 5, 4, 6}, float32);
  eval(in);
  auto f = [&](const std::vector<array>& x) {
    return std::vector<array>{
        fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.6f, "causal", {}, {}, cpu)};
  };
  array out = f(in)[0];
  ASSERT_EQ(std::string(out.primitive().name()), "ScaledDotProductAttention");
  array on_gpu(out.shape(), float32,
               std::make_shared<fast::ScaledDotProductAttention>(gpu, 0.6f, true, false, false),
               out.inputs());
  expect_close(on_gpu, to_vector(out), out.shape(), 1e-5, 1e-5);
  array d_o = random_array(out.shape(), float32, -1, 1, 4);
  auto grads = vjp(f, in, {d_o}).second;
  ASSERT_EQ(std::string(grads[0].primitive().name()), "ScaledDotProductAttentionVJP");
  auto gpu_grads = array::make_arrays(
      {grads[0].shape(), grads[1].shape(), grads[2].shape()}, {float32, float32, float32},
      std::make_shared<fast::ScaledDotProductAttentionVJP>(gpu, 0.6f, true, false, false),
      grads[0].inputs());
  for (int i = 0; i < 3; ++i) {
    expect_close(gpu_grads[i], to_vector(grads[i]), grads[i].shape(), 1e-4, 1e-4);
  }
}

TEST(FastRules, AttentionVmap) {
  with_and_without_lse([&] {
    AttnCase c{2, 4, 2, 3, 5, 4, 6};
    auto in = attn_inputs(c, float32);
    // Mapped along axis 0 of q, k and v: a vmap of three.
    auto batched = [&](int seed) {
      return std::vector<array>{random_array({3, 2, 4, 3, 4}, float32, -1, 1, seed),
                                random_array({3, 2, 2, 5, 4}, float32, -1, 1, seed + 1),
                                random_array({3, 2, 2, 5, 6}, float32, -1, 1, seed + 2)};
    };
    auto bin = batched(1);
    check_vmap(attn_fn(""), bin, {0, 0, 0});
    check_vmap(attn_fn("causal"), bin, {0, 0, 0}, {2});
    // Only the queries mapped (keys and values shared), at another axis.
    check_vmap(attn_fn("causal"), {moveaxis(bin[0], 0, 3), in[1], in[2]}, {3, -1, -1});
    // Keys mapped at the last axis, queries unmapped.
    check_vmap(attn_fn(""), {in[0], moveaxis(bin[1], 0, 4), in[2]}, {-1, 4, -1}, {1});
    // Masks and sinks, mapped or not.
    array bias = random_array({3, 4, 3, 5}, float32, -2, 1, 7);
    auto with_mask = [](const std::vector<array>& x) {
      return std::vector<array>{
          fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.5f, "array", x[3], x[4])};
    };
    array sinks = random_array({4}, float32, -1, 1, 8);
    array bsinks = random_array({3, 4}, float32, -1, 1, 9);
    check_vmap(with_mask, {bin[0], in[1], in[2], bias, sinks}, {0, -1, -1, 0, -1});
    check_vmap(with_mask, {bin[0], bin[1], bin[2], take(bias, 0, 0), bsinks}, {0, 0, 0, -1, 0});
    check_vmap(with_mask, {in[0], in[1], in[2], bias, bsinks}, {-1, -1, -1, 0, 0});
    array keep = greater(random_array({3, 1, 3, 5}, float32, -1, 1, 10), array(-0.5f));
    auto bool_mask = [](const std::vector<array>& x) {
      return std::vector<array>{
          fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.5f, "array", x[3])};
    };
    check_vmap(bool_mask, {bin[0], bin[1], bin[2], keep}, {0, 0, 0, 0});
  });
}

TEST(FastRules, AttentionVmapOfVjp) {
  with_and_without_lse([&] {
    auto bin = std::vector<array>{random_array({3, 1, 4, 3, 4}, float32, -1, 1, 1),
                                  random_array({3, 1, 2, 5, 4}, float32, -1, 1, 2),
                                  random_array({3, 1, 2, 5, 6}, float32, -1, 1, 3),
                                  random_array({3, 4}, float32, -1, 1, 4),
                                  random_array({3, 1, 4, 3, 6}, float32, -1, 1, 5)};
    auto f = vjp_fn(attn_fn("causal", std::nullopt, true), 4);
    check_vmap(f, bin, {0, 0, 0, 0, 0});
    // Shared keys, values and sinks: each batch entry gets its own dk, dv, dsinks.
    check_vmap(f, {bin[0], take(bin[1], 0, 0), take(bin[2], 0, 0), take(bin[3], 0, 0), bin[4]},
               {0, -1, -1, -1, 0}, {1, 0, 2, 1});
    auto g = vjp_fn(attn_fn("", random_array({3, 5}, float32, -1, 1, 6)), 3);
    check_vmap(g, {moveaxis(bin[0], 0, 2), bin[1], bin[2], bin[4]}, {2, 0, 0, 0});
  });
}

// Attention from matmul and softmax, for comparing the fused backward with the derivative
// of a composite.
array composite_attention(const array& q, const array& k, const array& v, float scale, bool causal,
                          const std::optional<array>& mask, const std::optional<array>& sinks) {
  int B = q.shape(0), n_q = q.shape(1), t_q = q.shape(2), n_kv = k.shape(1), t_kv = k.shape(2);
  int group = n_q / n_kv;
  array kk = repeat(k, group, 1), vv = repeat(v, group, 1);
  array s = multiply(matmul(q, swapaxes(kk, -1, -2)), array(scale, q.dtype()));
  array neg_inf(-INFINITY, q.dtype());
  if (mask)
    s = mask->dtype() == bool_ ? where(*mask, s, neg_inf) : add(s, *mask);
  if (causal) {
    array keep = greater_equal(reshape(arange(t_q), {t_q, 1}) + (t_kv - t_q),
                               reshape(arange(t_kv), {1, t_kv}));
    s = where(keep, s, neg_inf);
  }
  if (!sinks)
    return matmul(softmax(s, -1, true), vv);
  array col = broadcast_to(reshape(*sinks, {1, n_q, 1, 1}), {B, n_q, t_q, 1});
  array p = softmax(concatenate({col, s}, -1), -1, true);
  return matmul(slice(p, {0, 0, 0, 1}, {B, n_q, t_q, t_kv + 1}), vv);
}

TEST(FastRules, AttentionVjpMatchesComposite) {
  with_and_without_lse([&] {
    struct Case {
      AttnCase c;
      std::string mode;
      bool bool_mask, add_mask, sinks;
    };
    for (const Case& k : {Case{{2, 4, 2, 9, 70, 16, 8}, "", false, false, false},
                          Case{{1, 4, 1, 70, 80, 12, 16}, "causal", false, false, true},
                          Case{{2, 2, 2, 5, 7, 8, 8}, "array", true, false, false},
                          Case{{1, 6, 3, 5, 9, 8, 4}, "array", false, true, true}}) {
      const AttnCase& c = k.c;
      SCOPED_TRACE("mode '" + k.mode + "'");
      auto in = attn_inputs(c, float32, 21);
      if (k.sinks)
        in.push_back(random_array({c.n_q}, float32, -1, 1, 25));
      std::optional<array> mask;
      if (k.bool_mask)
        mask = greater(random_array({c.t_q, c.t_kv}, float32, -1, 1, 26), array(-0.6f));
      if (k.add_mask)
        mask = random_array({c.B, 1, c.t_q, c.t_kv}, float32, -2, 1, 27);
      float scale = 0.4f;
      auto composite = [&](const std::vector<array>& x) {
        std::optional<array> s;
        if (k.sinks)
          s = x[3];
        return std::vector<array>{
            composite_attention(x[0], x[1], x[2], scale, k.mode == "causal", mask, s)};
      };
      array d_o = random_array({c.B, c.n_q, c.t_q, c.Dv}, float32, -1, 1, 28);
      auto fused = vjp(attn_fn(k.mode, mask, k.sinks, scale), in, {d_o});
      auto ref = vjp(composite, in, {d_o});
      expect_close(fused.first[0], to_vector(ref.first[0]), d_o.shape(), 1e-4, 1e-5);
      for (size_t i = 0; i < in.size(); ++i) {
        SCOPED_TRACE("input " + std::to_string(i));
        expect_close(fused.second[i], to_vector(ref.second[i]), in[i].shape(), 1e-3, 1e-4);
      }
    }
  });
}

TEST(FastRules, SecondOrder) {
  // Derivatives of the backward primitives (through their composites) and of the inverse
  // rotation: check_grad of functions that return vjps.
  array x = random_array({3, 4}, float64, -1, 1, 1);
  array w = random_array({4}, float64, 0.5, 1.5, 2);
  array g = random_array({3, 4}, float64, -1, 1, 3);
  check_grad(vjp_fn(rms_fn(true), 2), {x, w, g});
  check_grad(vjp_fn(rms_fn(false), 1), {x, g});
  check_grad(vjp_fn(layer_fn(true, true), 3), {x, w, w, g});
  check_grad(vjp_fn(layer_fn(false, false), 1), {x, g});
  check_grad(vjp_fn(rope_fn(4, true, 2), 1),
             {random_array({2, 3, 4}, float64, -1, 1, 4), random_array({2, 3, 4}, float64)});
  // With lse, the backward's own rules give it no cotangent and recompute it.
  with_and_without_lse([&] {
    AttnCase c{1, 2, 1, 2, 3, 3, 2};
    auto in = attn_inputs(c, float64, 5);
    in.push_back(random_array({2}, float64, -1, 1, 8));
    in.push_back(random_array({1, 2, 2, 2}, float64, -1, 1, 9));
    check_grad(vjp_fn(attn_fn("causal", std::nullopt, true), 4), in);
    in.erase(in.begin() + 3);
    check_grad(vjp_fn(attn_fn("array", random_array({2, 3}, float64, -1, 1, 10)), 3), in);
    check_grad(vjp_fn(attn_fn(""), 3), in);
  });
}

// Where a transform traces the forward, the fused primitive also outputs lse (on GPU streams by
// default, on any with AttentionLse::always) and its backward reads it; plain calls build the
// one-output primitive. The CPU backward ignores it, so the gradients are the same bits.
TEST(FastRules, AttentionLseOnlyWhereTraced) {
  Stream cpu = default_stream(Device::cpu);
  auto in = attn_inputs(AttnCase{1, 4, 2, 5, 7, 8, 6}, float32);
  array d_o = random_array({1, 4, 5, 6}, float32, -1, 1, 3);
  auto f = [cpu](const std::vector<array>& x) {
    return std::vector<array>{
        fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.4f, "causal", {}, {}, cpu)};
  };
  auto lse_flag = [](const array& out) {
    return static_cast<fast::ScaledDotProductAttention&>(out.primitive()).output_lse();
  };
  std::vector<array> ref;
  {
    LseMode scope(AttentionLse::never);
    ref = vjp(f, in, {d_o}).second;
    eval(ref);
  }
  for (AttentionLse mode : {AttentionLse::gpu, AttentionLse::always, AttentionLse::never}) {
    SCOPED_TRACE(static_cast<int>(mode));
    LseMode scope(mode);
    const bool lse = mode == AttentionLse::always;  // the default: GPU streams only
    array out = f(in)[0];
    ASSERT_TRUE(made_by(out, "ScaledDotProductAttention"));
    EXPECT_FALSE(lse_flag(out));
    EXPECT_FALSE(out.has_siblings());
    auto grads = vjp(f, in, {d_o}).second;
    ASSERT_TRUE(made_by(grads[0], "ScaledDotProductAttentionVJP"));
    EXPECT_EQ(static_cast<fast::ScaledDotProductAttentionVJP&>(grads[0].primitive()).has_lse(),
              lse);
    const std::vector<array>& back_in = grads[0].inputs();
    ASSERT_EQ(back_in.size(), lse ? 6u : 5u);
    const array& forward = back_in[3];
    ASSERT_TRUE(made_by(forward, "ScaledDotProductAttention"));
    EXPECT_EQ(lse_flag(forward), lse);
    if (lse) {
      auto outs = forward.outputs();
      ASSERT_EQ(outs.size(), 2u);
      EXPECT_EQ(back_in[5].id(), outs[1].id());
      EXPECT_EQ(back_in[5].dtype(), float32);
      EXPECT_EQ(back_in[5].shape(), Shape({1, 4, 5}));
    }
    for (int i = 0; i < 3; ++i) {
      expect_close(grads[i], to_vector(ref[i]), ref[i].shape(), 0, 0);
    }
  }
  // Seen from the traced function: value_and_grad and, under compile, both it and a plain
  // forward (compile traces; the unread lse costs a float per row) ask for it.
  LseMode scope(AttentionLse::always);
  std::vector<bool> seen;
  auto loss = [&](const std::vector<array>& x) {
    array o = f(x)[0];
    seen.push_back(lse_flag(o));
    return std::vector<array>{sum(multiply(o, d_o))};
  };
  auto step = [&](const std::vector<array>& x) {
    auto [value, g] = value_and_grad(loss, {0, 1, 2})(x);
    g.insert(g.begin(), value[0]);
    return g;
  };
  auto plain = loss(in);
  EXPECT_FALSE(seen.back());
  auto direct = step(in);
  EXPECT_TRUE(seen.back());
  seen.clear();
  auto compiled = compile(step)(in);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(seen.back());
  for (size_t i = 0; i < direct.size(); ++i) {
    expect_close(compiled[i], to_vector(direct[i]), direct[i].shape(), 1e-6, 1e-6);
    if (i > 0) {
      expect_close(direct[i], to_vector(ref[i - 1]), ref[i - 1].shape(), 0, 0);
    }
  }
  seen.clear();
  compile(loss)(in);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(seen.back());
  // Common subexpressions: a forward with lse is not one without.
  fast::ScaledDotProductAttention with(cpu, 0.4f, true, false, false, true),
      without(cpu, 0.4f, true, false, false);
  EXPECT_FALSE(with.is_equivalent(without));
  EXPECT_TRUE(
      with.is_equivalent(fast::ScaledDotProductAttention(cpu, 0.4f, true, false, false, true)));
  fast::ScaledDotProductAttentionVJP back_with(cpu, 0.4f, true, false, false, true),
      back_without(cpu, 0.4f, true, false, false);
  EXPECT_FALSE(back_with.is_equivalent(back_without));
}

// lse's own rules: its tangent (d lse = sum_j p_j d(logit_j), sinks included, masks constant)
// against finite differences, and vmap of both outputs (lse's folded head axis split as out's).
TEST(FastRules, AttentionLseTangentAndVmap) {
  auto with_lse = [](const std::string& mode, std::optional<array> mask = std::nullopt,
                     bool sinks = false) -> ArrayFn {
    return [=](const std::vector<array>& x) {
      std::optional<array> s;
      if (sinks)
        s = x[3];
      return fast::detail::scaled_dot_product_attention_with_lse(x[0], x[1], x[2], 0.6f, mode, mask,
                                                                 s);
    };
  };
  // lse is float32 whatever the inputs: steps large enough for its differences to resolve.
  GradCheckOptions jvp_only;
  jvp_only.check_vjp = false;
  jvp_only.eps = 1e-3;
  jvp_only.rtol = 1e-3;
  jvp_only.atol = 2e-4;
  AttnCase c{1, 4, 2, 3, 5, 4, 3};
  auto in = attn_inputs(c, float64);
  check_grad(with_lse(""), in, jvp_only);
  check_grad(with_lse("causal"), in, jvp_only);
  check_grad(with_lse("array", random_array({1, 4, 3, 5}, float64, -2, 1, 7)), in, jvp_only);
  auto with_sinks = in;
  with_sinks.push_back(random_array({4}, float64, -1, 1, 8));
  check_grad(with_lse("causal", std::nullopt, true), with_sinks, jvp_only);
  // vmap: every operand mapped (the batch folded outside the heads), queries only (inside), keys
  // only, and sinks.
  auto bin = std::vector<array>{random_array({3, 1, 4, 3, 4}, float32, -1, 1, 1),
                                random_array({3, 1, 2, 5, 4}, float32, -1, 1, 2),
                                random_array({3, 1, 2, 5, 3}, float32, -1, 1, 3)};
  auto in32 = attn_inputs(c, float32, 4);
  check_vmap(with_lse("causal"), bin, {0, 0, 0});
  check_vmap(with_lse(""), {moveaxis(bin[0], 0, 3), in32[1], in32[2]}, {3, -1, -1}, {2, 1});
  check_vmap(with_lse("causal"), {in32[0], moveaxis(bin[1], 0, 4), in32[2]}, {-1, 4, -1});
  check_vmap(with_lse("", std::nullopt, true),
             {bin[0], in32[1], in32[2], random_array({3, 4}, float32, -1, 1, 5)}, {0, -1, -1, 0});
}

TEST(FastRules, RoPEVmapPerEntryFrequencies) {
  // One set of frequencies per batch entry: the composite fallback.
  array x = random_array({3, 2, 4, 6}, float32, -1, 1, 1);
  array freqs = random_array({3, 3}, float32, 1, 20, 2);
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{fast::rope(in[0], 6, false, std::nullopt, 1.0f, 3, in[1])};
  };
  check_vmap(f, {x, freqs}, {0, 0});
  check_vmap(f, {take(x, 0, 0), freqs}, {-1, 1});
}

// ---------------------------------------------------------------------------- cross entropy

ArrayFn xent_fn() {
  return [](const std::vector<array>& in) {
    return std::vector<array>{fast::cross_entropy(in[0], in[1])};
  };
}

TEST(FastRules, CrossEntropyGrad) {
  array t = array({2, 0, 4}, int32);
  // The loss is float32 even for float64 logits, so the differences take a float32 step.
  for (Dtype dt : {float64, float32}) {
    SCOPED_TRACE(dtype_name(dt));
    check_grad(xent_fn(), {random_array({3, 5}, dt, -3, 3, 1), t},
               {.argnums = {0}, .eps = 1e-3, .rtol = 2e-3});
  }
  auto grads = vjp(xent_fn(), {random_array({3, 5}), t}, {random_array({3})}).second;
  EXPECT_TRUE(made_by(grads[0], "CrossEntropyVJP"));
  EXPECT_EQ(to_vector(grads[1]), std::vector<double>(3, 0.0));
  // Second order, through CrossEntropyVJP's composite rules: in x at float64 precision; in
  // the cotangent with a float32 step, as the loss (so its cotangent) is float32.
  std::vector<array> in = {random_array({3, 5}, float64, -2, 2, 2), t,
                           random_array({3}, float64, -1, 1, 3)};
  check_grad(vjp_fn(xent_fn(), 2), in, {.argnums = {0}});
  check_grad(vjp_fn(xent_fn(), 2), in, {.argnums = {2}, .eps = 1e-3, .rtol = 2e-3});
}

TEST(FastRules, CrossEntropyVmap) {
  array x = random_array({3, 4, 6}, float32, -2, 2, 1);
  array t = array({0, 5, 2, 3, 1, 1, 4, 0, 5, 2, 2, 3}, {4, 3}, int32);
  check_vmap(xent_fn(), {x, t}, {0, 1});
  check_vmap(xent_fn(), {moveaxis(x, 0, 1), take(t, 0, 1)}, {1, -1});
  check_vmap(xent_fn(), {take(x, 0, 0), t}, {-1, 1});
  array g = random_array({3, 4}, float32, -1, 1, 2);
  auto back = vjp_fn(xent_fn(), 2);
  check_vmap(back, {x, t, g}, {0, 1, 0});
  check_vmap(back, {take(x, 1, 0), t, g}, {-1, 1, 0});
}

}  // namespace
}  // namespace mlx::core::test
