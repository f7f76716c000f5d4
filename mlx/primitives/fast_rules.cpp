// Transform rules of the fused `fast` primitives. Reverse mode runs fused backward kernels
// (RMSNormVJP, LayerNormVJP, the inverse RoPE, ScaledDotProductAttentionVJP); forward mode and
// the backward primitives' own derivatives go through composites of ops; vmap folds the
// mapped axis into the kernels' batch or head axes.
#include <cmath>
#include <limits>
#include <optional>

#include "mlx/fast.h"
#include "mlx/ops.h"
#include "mlx/primitives/fast.h"
#include "mlx/transforms/rule_utils.h"
#include "mlx/transforms/transforms.h"

namespace mlx::core::fast {

namespace {

using Rules = std::pair<std::vector<array>, std::vector<int>>;

// ---------------------------------------------------------------------------- helpers

// jvp, vjp and vmap of a primitive through `f`, a composite of ops computing its outputs from
// its inputs.
std::vector<array> composite_jvp(const ArrayFn& f, const std::vector<array>& primals,
                                 const std::vector<array>& tangents,
                                 const std::vector<int>& argnums) {
  std::vector<array> all;
  for (auto& p : primals) {
    all.push_back(zeros_like(p));
  }
  for (size_t k = 0; k < argnums.size(); ++k) {
    all[argnums[k]] = tangents[k];
  }
  return jvp(f, primals, all).second;
}

std::vector<array> composite_vjp(const ArrayFn& f, const std::vector<array>& primals,
                                 const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums) {
  return core::detail::vjp(f, primals, cotangents, argnums).second;
}

Rules composite_vmap(const ArrayFn& f, const std::vector<array>& inputs,
                     const std::vector<int>& axes) {
  std::vector<array> outs = vmap(f, axes)(inputs);
  return {outs, std::vector<int>(outs.size(), 0)};
}

// The size of the mapped axes.
int batch_size(const std::vector<array>& inputs, const std::vector<int>& axes) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (axes[i] >= 0) {
      return inputs[i].shape(axes[i]);
    }
  }
  throw std::logic_error("[fast] vmap rule called without a mapped input.");
}

// x with its mapped axis at `pos`; an unmapped x gets a broadcast axis of size bv there.
array batch_at(const array& x, int axis, int bv, int pos, Stream s) {
  if (axis >= 0) {
    return moveaxis(x, axis, pos, s);
  }
  array e = expand_dims(x, pos, s);
  Shape shape = e.shape();
  shape[pos] = bv;
  return broadcast_to(e, shape, s);
}

// Merges axes `pos` and `pos + 1` of x.
array merge_axes(const array& x, int pos, Stream s) {
  Shape shape = x.shape();
  shape[pos] *= shape[pos + 1];
  shape.erase(shape.begin() + pos + 1);
  return reshape(x, std::move(shape), s);
}

// Splits axis `pos` of x into (a, b).
array split_axis(const array& x, int pos, int a, int b, Stream s) {
  Shape shape = x.shape();
  shape[pos] = b;
  shape.insert(shape.begin() + pos, a);
  return reshape(x, std::move(shape), s);
}

// Dimension d of one slice of x along its mapped axis (-1: x itself).
int slice_dim(const array& x, int axis, int d) {
  return x.shape(axis >= 0 && axis <= d ? d + 1 : d);
}

// Sum over every axis but the first `keep_front` and the last.
array sum_rows(const array& x, int keep_front, Stream s) {
  std::vector<int> axes;
  for (int a = keep_front; a < x.ndim() - 1; ++a) {
    axes.push_back(a);
  }
  return axes.empty() ? x : sum(x, axes, false, s);
}

// A (D,) parameter mapped along `axis` shaped to broadcast against batched rows of `ndim`
// dimensions (batch first); unmapped parameters broadcast as they are.
array batched_param(const array& p, int axis, int ndim, Stream s) {
  if (axis < 0) {
    return p;
  }
  array b = moveaxis(p, axis, 0, s);
  Shape shape(ndim, 1);
  shape.front() = b.shape(0);
  shape.back() = b.shape(1);
  return reshape(b, std::move(shape), s);
}

// ---------------------------------------------------------------------------- norms

// Composite backward passes: {x, weight?, g} -> {dx, dweight?, dbias?}.
ArrayFn rms_norm_backward_fn(float eps, bool has_weight, Stream s) {
  return [=](const std::vector<array>& in) {
    const array& x = in[0];
    const array& g = in.back();
    array r = rsqrt(add(mean(square(x, s), -1, true, s), array(eps, x.dtype()), s), s);
    array gw = has_weight ? multiply(g, in[1], s) : g;
    array r3 = multiply(r, square(r, s), s);
    array c = multiply(r3, mean(multiply(gw, x, s), -1, true, s), s);
    std::vector<array> out = {subtract(multiply(r, gw, s), multiply(x, c, s), s)};
    if (has_weight) {
      out.push_back(sum_rows(multiply(g, multiply(x, r, s), s), 0, s));
    }
    return out;
  };
}

ArrayFn layer_norm_backward_fn(float eps, bool has_weight, bool has_bias, Stream s) {
  return [=](const std::vector<array>& in) {
    const array& x = in[0];
    const array& g = in.back();
    array xc = subtract(x, mean(x, -1, true, s), s);
    array r = rsqrt(add(mean(square(xc, s), -1, true, s), array(eps, x.dtype()), s), s);
    array xhat = multiply(xc, r, s);
    array gw = has_weight ? multiply(g, in[1], s) : g;
    array inner = subtract(subtract(gw, mean(gw, -1, true, s), s),
                           multiply(xhat, mean(multiply(gw, xhat, s), -1, true, s), s), s);
    std::vector<array> out = {multiply(r, inner, s)};
    if (has_weight) {
      out.push_back(sum_rows(multiply(g, xhat, s), 0, s));
    }
    if (has_bias) {
      out.push_back(sum_rows(g, 0, s));
    }
    return out;
  };
}

std::vector<array> norm_vjp_outputs(std::shared_ptr<Primitive> prim, std::vector<array> inputs,
                                    int n_params) {
  const array& x = inputs[0];
  std::vector<Shape> shapes = {x.shape()};
  shapes.resize(1 + n_params, Shape{x.shape(-1)});
  std::vector<Dtype> dtypes(shapes.size(), x.dtype());
  return array::make_arrays(std::move(shapes), dtypes, prim, inputs);
}

// vmap of a norm backward: dx from the fused kernel over the batched rows (a mapped weight is
// folded into the cotangent, as dx depends on g * weight only); the parameter gradients are
// sums of g * xhat and of g over each batch entry's rows. `kernel(x, weight?, g)` runs the
// fused backward, `normalize(x)` the forward without weight and bias.
template <typename Kernel, typename Normalize>
Rules vmap_norm_backward(const std::vector<array>& inputs, const std::vector<int>& axes,
                         bool has_weight, bool has_bias, Kernel kernel, Normalize normalize,
                         Stream s) {
  int bv = batch_size(inputs, axes);
  array x = batch_at(inputs[0], axes[0], bv, 0, s);
  array g = batch_at(inputs.back(), axes.back(), bv, 0, s);
  array gw = g;
  std::optional<array> w;
  if (has_weight && axes[1] >= 0) {
    gw = multiply(g, batched_param(inputs[1], axes[1], x.ndim(), s), s);
  } else if (has_weight) {
    w = inputs[1];
  }
  std::vector<array> out = {kernel(x, w, gw)};
  if (has_weight) {
    out.push_back(sum_rows(multiply(g, normalize(x), s), 1, s));
  }
  if (has_bias) {
    out.push_back(sum_rows(g, 1, s));
  }
  return {out, std::vector<int>(out.size(), 0)};
}

}  // namespace

// The Jacobian of x -> normalized x (without weight) is symmetric, so its product with a
// tangent is the fused backward kernel applied to that tangent.

std::vector<array> RMSNorm::jvp(const std::vector<array>& primals,
                                const std::vector<array>& tangents,
                                const std::vector<int>& argnums) {
  const array& x = primals[0];
  std::optional<array> out;
  auto add_term = [&](array t) { out = out ? add(*out, t, stream()) : t; };
  for (size_t k = 0; k < argnums.size(); ++k) {
    if (argnums[k] == 0) {
      auto prim = std::make_shared<RMSNormVJP>(stream(), eps_, false);
      array d = norm_vjp_outputs(prim, {x, astype(tangents[k], x.dtype(), stream())}, 0)[0];
      add_term(has_weight_ ? multiply(d, primals[1], stream()) : d);
    } else {
      add_term(multiply(rms_norm(x, std::nullopt, eps_, stream()), tangents[k], stream()));
    }
  }
  return {*out};
}

std::vector<array> RMSNorm::vjp(const std::vector<array>& primals,
                                const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> inputs = primals;
  inputs.push_back(astype(cotangents[0], primals[0].dtype(), stream()));
  auto grads = norm_vjp_outputs(std::make_shared<RMSNormVJP>(stream(), eps_, has_weight_),
                                std::move(inputs), has_weight_);
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(grads[a]);
  }
  return out;
}

Rules RMSNorm::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  array x = core::detail::batch_first(inputs[0], axes[0]);
  // A weight mapped per batch entry scales the kernel's output.
  bool w_in = has_weight_ && axes[1] < 0;
  std::optional<array> w;
  if (w_in) {
    w = inputs[1];
  }
  array y = rms_norm(x, w, eps_, s);
  if (has_weight_ && !w_in) {
    y = multiply(y, batched_param(inputs[1], axes[1], inputs[0].ndim() + (axes[0] < 0), s), s);
  }
  return {{y}, {0}};
}

std::vector<array> LayerNorm::jvp(const std::vector<array>& primals,
                                  const std::vector<array>& tangents,
                                  const std::vector<int>& argnums) {
  const array& x = primals[0];
  std::optional<array> out;
  auto add_term = [&](array t) { out = out ? add(*out, t, stream()) : t; };
  for (size_t k = 0; k < argnums.size(); ++k) {
    int a = argnums[k];
    if (a == 0) {
      auto prim = std::make_shared<LayerNormVJP>(stream(), eps_, false, false);
      array d = norm_vjp_outputs(prim, {x, astype(tangents[k], x.dtype(), stream())}, 0)[0];
      add_term(has_weight_ ? multiply(d, primals[1], stream()) : d);
    } else if (a == 1 && has_weight_) {
      array xhat = layer_norm(x, std::nullopt, std::nullopt, eps_, stream());
      add_term(multiply(xhat, tangents[k], stream()));
    } else {
      add_term(broadcast_to(tangents[k], x.shape(), stream()));
    }
  }
  return {*out};
}

std::vector<array> LayerNorm::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents,
                                  const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> inputs = {primals[0]};
  if (has_weight_) {
    inputs.push_back(primals[1]);
  }
  inputs.push_back(astype(cotangents[0], primals[0].dtype(), stream()));
  auto prim = std::make_shared<LayerNormVJP>(stream(), eps_, has_weight_, has_bias_);
  auto grads = norm_vjp_outputs(prim, std::move(inputs), has_weight_ + has_bias_);
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(grads[a]);
  }
  return out;
}

Rules LayerNorm::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  array x = core::detail::batch_first(inputs[0], axes[0]);
  int ndim = inputs[0].ndim() + (axes[0] < 0);
  // Parameters mapped per batch entry are applied after the kernel; the kernel takes the
  // unmapped ones that come before them in (x * weight + bias).
  int bi = 1 + has_weight_;
  bool w_in = has_weight_ && axes[1] < 0;
  bool b_in = has_bias_ && axes[bi] < 0 && (!has_weight_ || w_in);
  std::optional<array> w, b;
  if (w_in) {
    w = inputs[1];
  }
  if (b_in) {
    b = inputs[bi];
  }
  array y = layer_norm(x, w, b, eps_, s);
  if (has_weight_ && !w_in) {
    y = multiply(y, batched_param(inputs[1], axes[1], ndim, s), s);
  }
  if (has_bias_ && !b_in) {
    y = add(y, batched_param(inputs[bi], axes[bi], ndim, s), s);
  }
  return {{y}, {0}};
}

// Backward primitives: derivatives through the composite backward passes.

std::vector<array> RMSNormVJP::jvp(const std::vector<array>& primals,
                                   const std::vector<array>& tangents,
                                   const std::vector<int>& argnums) {
  return composite_jvp(rms_norm_backward_fn(eps_, has_weight_, stream()), primals, tangents,
                       argnums);
}

std::vector<array> RMSNormVJP::vjp(const std::vector<array>& primals,
                                   const std::vector<array>& cotangents,
                                   const std::vector<int>& argnums, const std::vector<array>&) {
  return composite_vjp(rms_norm_backward_fn(eps_, has_weight_, stream()), primals, cotangents,
                       argnums);
}

Rules RMSNormVJP::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  float eps = eps_;
  auto kernel = [&](const array& x, const std::optional<array>& w, const array& g) {
    std::vector<array> in = {x};
    if (w) {
      in.push_back(*w);
    }
    in.push_back(g);
    auto prim = std::make_shared<RMSNormVJP>(s, eps, w.has_value());
    return norm_vjp_outputs(prim, std::move(in), w.has_value())[0];
  };
  auto normalize = [&](const array& x) { return rms_norm(x, std::nullopt, eps, s); };
  return vmap_norm_backward(inputs, axes, has_weight_, false, kernel, normalize, s);
}

std::vector<array> LayerNormVJP::jvp(const std::vector<array>& primals,
                                     const std::vector<array>& tangents,
                                     const std::vector<int>& argnums) {
  return composite_jvp(layer_norm_backward_fn(eps_, has_weight_, has_bias_, stream()), primals,
                       tangents, argnums);
}

std::vector<array> LayerNormVJP::vjp(const std::vector<array>& primals,
                                     const std::vector<array>& cotangents,
                                     const std::vector<int>& argnums, const std::vector<array>&) {
  return composite_vjp(layer_norm_backward_fn(eps_, has_weight_, has_bias_, stream()), primals,
                       cotangents, argnums);
}

Rules LayerNormVJP::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  float eps = eps_;
  auto kernel = [&](const array& x, const std::optional<array>& w, const array& g) {
    std::vector<array> in = {x};
    if (w) {
      in.push_back(*w);
    }
    in.push_back(g);
    auto prim = std::make_shared<LayerNormVJP>(s, eps, w.has_value(), false);
    return norm_vjp_outputs(prim, std::move(in), w.has_value())[0];
  };
  auto normalize = [&](const array& x) {
    return layer_norm(x, std::nullopt, std::nullopt, eps, s);
  };
  return vmap_norm_backward(inputs, axes, has_weight_, has_bias_, kernel, normalize, s);
}

// ---------------------------------------------------------------------------- rope

namespace {

// Rotary encoding of x (B, ..., T, D) from ops, for per-entry frequencies under vmap.
array rope_reference(const array& x, const array& offset, const std::optional<array>& freqs,
                     int dims, bool traditional, float base, float scale, bool inverse, Stream s) {
  int half = dims / 2, nd = x.ndim(), T = x.shape(-2);
  array inv_freq = freqs ? reciprocal(*freqs, s) : array(0.0f);
  if (!freqs) {
    std::vector<float> f(half);
    for (int i = 0; i < half; ++i) {
      f[i] = static_cast<float>(std::pow(static_cast<double>(base), -2.0 * i / dims));
    }
    inv_freq = array(f, {half});
  }
  Shape pos_shape(nd, 1);
  pos_shape[nd - 2] = T;
  array pos = reshape(arange(static_cast<double>(T), float32, s), pos_shape, s);
  array off = astype(offset, float32, s);
  if (off.ndim() == 1) {
    Shape off_shape(nd, 1);
    off_shape[0] = off.shape(0);
    off = reshape(off, off_shape, s);
  }
  array theta = multiply(multiply(add(pos, off, s), array(scale), s), inv_freq, s);
  array c = astype(cos(theta, s), x.dtype(), s);
  array sn = astype(sin(theta, s), x.dtype(), s);
  if (inverse) {
    sn = negative(sn, s);
  }
  auto part = [&](int start, int stop, int step) {
    Shape lo(nd, 0), hi = x.shape(), st(nd, 1);
    lo.back() = start;
    hi.back() = stop;
    st.back() = step;
    return slice(x, lo, hi, st, s);
  };
  array x1 = traditional ? part(0, dims, 2) : part(0, half, 1);
  array x2 = traditional ? part(1, dims, 2) : part(half, dims, 1);
  array o1 = subtract(multiply(x1, c, s), multiply(x2, sn, s), s);
  array o2 = add(multiply(x1, sn, s), multiply(x2, c, s), s);
  array rot = concatenate({o1, o2}, -1, s);
  if (traditional) {
    Shape shape = x1.shape();
    shape.back() = dims;
    rot = reshape(stack({o1, o2}, -1, s), shape, s);
  }
  return dims < x.shape(-1) ? concatenate({rot, part(dims, x.shape(-1), 1)}, -1, s) : rot;
}

}  // namespace

array RoPE::rotate(const array& x, const std::vector<array>& inputs, bool inverse) {
  std::vector<array> in = inputs;
  in[0] = x;
  auto prim =
      std::make_shared<RoPE>(stream(), dims_, traditional_, base_, scale_, has_freqs_, inverse);
  return array(x.shape(), x.dtype(), std::move(prim), std::move(in));
}

// Offsets and frequencies get no derivative.

std::vector<array> RoPE::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>& argnums) {
  if (argnums[0] != 0) {
    return {zeros_like(primals[0], stream())};
  }
  return {rotate(tangents[0], primals, inverse_)};
}

std::vector<array> RoPE::vjp(const std::vector<array>& primals,
                             const std::vector<array>& cotangents, const std::vector<int>& argnums,
                             const std::vector<array>&) {
  std::vector<array> out;
  for (int a : argnums) {
    // The rotation is orthogonal: its transpose is the inverse rotation.
    out.push_back(a == 0 ? rotate(cotangents[0], primals, !inverse_)
                         : zeros_like(primals[a], stream()));
  }
  return out;
}

Rules RoPE::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  if (has_freqs_ && axes[2] >= 0) {
    // The kernel takes one set of frequencies.
    int dims = dims_;
    bool trad = traditional_, inv = inverse_;
    float base = base_, scale = scale_;
    auto f = [=](const std::vector<array>& in) {
      return std::vector<array>{
          rope_reference(in[0], in[1], in[2], dims, trad, base, scale, inv, s)};
    };
    return composite_vmap(f, inputs, axes);
  }
  std::vector<array> in = inputs;
  if (axes[1] < 0) {
    // Shared offsets index axis 0: the batch axis goes next to it.
    return {{rotate(moveaxis(inputs[0], axes[0], 1, s), in, inverse_)}, {1}};
  }
  // Offsets per batch entry: the batch axis goes first; offsets that are per row of axis 0 of
  // x as well index the merged first two axes.
  int bv = batch_size(inputs, axes);
  array x = batch_at(inputs[0], axes[0], bv, 0, s);
  in[1] = moveaxis(inputs[1], axes[1], 0, s);
  if (in[1].ndim() == 1) {
    return {{rotate(x, in, inverse_)}, {0}};
  }
  in[1] = reshape(broadcast_to(in[1], {bv, x.shape(1)}, s), {bv * x.shape(1)}, s);
  array y = rotate(merge_axes(x, 0, s), in, inverse_);
  return {{reshape(y, x.shape(), s)}, {0}};
}

// ---------------------------------------------------------------------------- attention

namespace {

struct AttnSpec {
  float scale;
  bool causal, has_mask, has_sinks;
  Stream s;
  bool has_lse = false;  // the backward's inputs end with the forward's lse
  int sinks_index() const { return 3 + has_mask; }
  bool is_mask(int i) const { return has_mask && i == 3; }
  // The backward's inputs: out at out_index(), then d_out (and lse).
  int out_index() const { return 3 + has_mask + has_sinks; }
};

// (B, N_q, T, X) -> (B, N_kv, group, T, X): query heads grouped by their key/value head.
array by_kv_head(const array& x, int n_kv, Stream s) {
  return split_axis(x, 1, n_kv, x.shape(1) / n_kv, s);
}

// The attention probabilities (B, N_q, T_q, T_kv) of inputs {q, k, v, mask?, sinks?, ...},
// the sinks' probabilities (B, N_q, T_q, 1) when there are sinks, the scaled queries grouped
// by key/value head, and the softmax's logits (the masked scores, after the sink's logit when
// there are sinks).
struct Probs {
  array p, q5, logits;
  std::optional<array> p_sink;
};

Probs attention_probs(const std::vector<array>& in, const AttnSpec& a) {
  Stream s = a.s;
  const array& q = in[0];
  const array& k = in[1];
  int B = q.shape(0), n_q = q.shape(1), t_q = q.shape(2), n_kv = k.shape(1), t_kv = k.shape(2);
  Dtype t = q.dtype();
  array q5 = by_kv_head(multiply(q, array(a.scale, t), s), n_kv, s);
  array scores = matmul(q5, swapaxes(expand_dims(k, 2, s), -1, -2, s), s);
  scores = reshape(scores, {B, n_q, t_q, t_kv}, s);
  array neg_inf(-std::numeric_limits<float>::infinity(), t);
  if (a.has_mask) {
    // The mask gets no gradient, as from the fused kernel's vjp.
    array m = stop_gradient(in[3], s);
    scores = m.dtype() == bool_ ? where(m, scores, neg_inf, s) : add(scores, m, s);
  }
  if (a.causal) {
    array rows = reshape(add(arange(t_q, s), array(t_kv - t_q), s), {t_q, 1}, s);
    array keep = greater_equal(rows, reshape(arange(t_kv, s), {1, t_kv}, s), s);
    scores = where(keep, scores, neg_inf, s);
  }
  if (!a.has_sinks) {
    // Rows that see no key are zeros (the kernels' rule), not 0 / 0.
    array visible = any(not_equal(scores, neg_inf, s), std::vector<int>{-1}, true, s);
    return {where(visible, softmax(scores, -1, true, s), array(0, t), s), q5, scores, std::nullopt};
  }
  array sink = reshape(in[a.sinks_index()], {1, n_q, 1, 1}, s);
  array logits = concatenate({broadcast_to(sink, {B, n_q, t_q, 1}, s), scores}, -1, s);
  array full = softmax(logits, -1, true, s);
  return {slice(full, {0, 0, 0, 1}, {B, n_q, t_q, t_kv + 1}, s), q5, logits,
          slice(full, {0, 0, 0, 0}, {B, n_q, t_q, 1}, s)};
}

// Each row's log-sum-exp of its logits (B, N_q, T_q, X), float32 (B, N_q, T_q), computed in the
// accumulation type: -inf for a row of -inf (or no logits), whose derivative is zero rather
// than the NaN of logsumexp's there.
array row_lse(const array& logits, Stream s) {
  const float inf = std::numeric_limits<float>::infinity();
  array x = astype(logits, accumulation_dtype(logits.dtype()), s);
  array visible = any(not_equal(x, array(-inf, x.dtype()), s), std::vector<int>{-1}, false, s);
  array safe = where(expand_dims(visible, -1, s), x, array(0, x.dtype()), s);
  array lse =
      where(visible, logsumexp(safe, std::vector<int>{-1}, false, s), array(-inf, x.dtype()), s);
  return astype(lse, float32, s);
}

// Composite forward: {q, k, v, mask?, sinks?} -> {out} or, with `with_lse`, {out, lse}.
std::vector<array> attention_reference(const std::vector<array>& in, const AttnSpec& a,
                                       bool with_lse = false) {
  Stream s = a.s;
  const array& v = in[2];
  Probs pr = attention_probs(in, a);
  int n_kv = v.shape(1);
  array o = matmul(by_kv_head(pr.p, n_kv, s), expand_dims(v, 2, s), s);
  Shape shape = in[0].shape();
  shape.back() = v.shape(3);
  std::vector<array> out = {reshape(o, shape, s)};
  if (with_lse) {
    out.push_back(row_lse(pr.logits, s));
  }
  return out;
}

// Composite backward: {q, k, v, mask?, sinks?, out, d_out, lse?} -> {dq, dk, dv, dsinks?}. The
// probabilities are recomputed from q and k, never read from lse: lse is a function of q and k
// that this forms again, so the derivatives of the result (the backward's own rules) reach q
// and k through it, and an lse input gets none.
std::vector<array> attention_backward_reference(const std::vector<array>& in, const AttnSpec& a) {
  Stream s = a.s;
  const array& q = in[0];
  const array& k = in[1];
  const array& v = in[2];
  const array& o = in[a.out_index()];
  const array& d_o = in[a.out_index() + 1];
  int n_kv = k.shape(1);
  Probs pr = attention_probs(in, a);
  array do5 = by_kv_head(d_o, n_kv, s);
  array dp = reshape(matmul(do5, swapaxes(expand_dims(v, 2, s), -1, -2, s), s), pr.p.shape(), s);
  array drow = sum(multiply(d_o, o, s), -1, true, s);
  array ds5 = by_kv_head(multiply(pr.p, subtract(dp, drow, s), s), n_kv, s);
  array dq = multiply(reshape(matmul(ds5, expand_dims(k, 2, s), s), q.shape(), s),
                      array(a.scale, q.dtype()), s);
  array dk = sum(matmul(swapaxes(ds5, -1, -2, s), pr.q5, s), 2, false, s);
  array dv = sum(matmul(swapaxes(by_kv_head(pr.p, n_kv, s), -1, -2, s), do5, s), 2, false, s);
  std::vector<array> out = {dq, dk, dv};
  if (a.has_sinks) {
    out.push_back(negative(sum(multiply(*pr.p_sink, drow, s), {0, 2, 3}, false, s), s));
  }
  return out;
}

std::vector<array> attention_vjp_fused(const std::vector<array>& in, const AttnSpec& a) {
  std::vector<Shape> shapes = {in[0].shape(), in[1].shape(), in[2].shape()};
  if (a.has_sinks) {
    shapes.push_back(in[a.sinks_index()].shape());
  }
  std::vector<Dtype> dtypes(shapes.size(), in[0].dtype());
  auto prim = std::make_shared<ScaledDotProductAttentionVJP>(a.s, a.scale, a.causal, a.has_mask,
                                                             a.has_sinks, a.has_lse);
  return array::make_arrays(std::move(shapes), dtypes, prim, in);
}

// Derivatives through a composite with the mask held constant (masks get no gradient).
std::vector<array> attention_jvp(const ArrayFn& f, const std::vector<array>& primals,
                                 const std::vector<array>& tangents,
                                 const std::vector<int>& argnums, const AttnSpec& a) {
  std::vector<int> args;
  std::vector<array> tans;
  for (size_t k = 0; k < argnums.size(); ++k) {
    if (!a.is_mask(argnums[k])) {
      args.push_back(argnums[k]);
      tans.push_back(tangents[k]);
    }
  }
  return composite_jvp(f, primals, tans, args);
}

std::vector<array> attention_vjp(const ArrayFn& f, const std::vector<array>& primals,
                                 const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums, const AttnSpec& a) {
  std::vector<int> args;
  for (int i : argnums) {
    if (!a.is_mask(i)) {
      args.push_back(i);
    }
  }
  std::vector<array> grads = composite_vjp(f, primals, cotangents, args);
  std::vector<array> out;
  size_t next = 0;
  for (int i : argnums) {
    out.push_back(a.is_mask(i) ? zeros_like(primals[i], a.s) : grads[next++]);
  }
  return out;
}

// Attention inputs with the mapped axis folded into the head axis: (B, N, T, X) operands
// become (B, bv * N, T, X), or (B, N * bv, T, X) with `inner`, sinks (bv * N) or (N * bv), and
// the backward's lse input (B, N, T) like the queries, (B, bv * N, T).
// Unmapped operands are broadcast, except keys and values with `inner`: each batch entry then
// joins the query-head groups of the shared key/value heads.
std::vector<array> fold_heads(const std::vector<array>& inputs, const std::vector<int>& axes,
                              int bv, bool inner, const AttnSpec& a) {
  std::vector<array> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inner && (i == 1 || i == 2)) {
      in.push_back(inputs[i]);
      continue;
    }
    int head = a.has_sinks && static_cast<int>(i) == a.sinks_index() ? 0 : 1;
    in.push_back(merge_axes(batch_at(inputs[i], axes[i], bv, head + inner, a.s), head, a.s));
  }
  return in;
}

}  // namespace

// Through the composite; with lse, its tangent too: d lse = sum_j p_j d(logit_j), the sink's
// logit included (the mask is constant).
std::vector<array> ScaledDotProductAttention::jvp(const std::vector<array>& primals,
                                                  const std::vector<array>& tangents,
                                                  const std::vector<int>& argnums) {
  AttnSpec a{scale_, causal_, has_mask_, has_sinks_, stream()};
  bool with_lse = output_lse_;
  auto f = [a, with_lse](const std::vector<array>& in) {
    return attention_reference(in, a, with_lse);
  };
  return attention_jvp(f, primals, tangents, argnums, a);
}

// The fused backward, given the forward's lse when it has one. lse's cotangent (cotangents[1])
// is not read: lse's only reader is ScaledDotProductAttentionVJP, whose own derivatives give it
// a zero cotangent (they recompute the probabilities from q and k, see
// attention_backward_reference), and the op never returns it.
std::vector<array> ScaledDotProductAttention::vjp(const std::vector<array>& primals,
                                                  const std::vector<array>& cotangents,
                                                  const std::vector<int>& argnums,
                                                  const std::vector<array>& outputs) {
  AttnSpec a{scale_, causal_, has_mask_, has_sinks_, stream(), output_lse_};
  std::vector<array> in = primals;
  in.push_back(outputs[0]);
  in.push_back(astype(cotangents[0], primals[0].dtype(), stream()));
  if (output_lse_) {
    in.push_back(outputs[1]);
  }
  std::vector<array> grads = attention_vjp_fused(in, a);
  std::vector<array> out;
  for (int i : argnums) {
    if (a.is_mask(i)) {
      out.push_back(zeros_like(primals[i], stream()));
    } else {
      out.push_back(grads[i < 3 ? i : 3]);
    }
  }
  return out;
}

Rules ScaledDotProductAttention::vmap(const std::vector<array>& inputs,
                                      const std::vector<int>& axes) {
  AttnSpec a{scale_, causal_, has_mask_, has_sinks_, stream()};
  int bv = batch_size(inputs, axes);
  bool inner = axes[1] < 0 && axes[2] < 0;
  std::vector<array> outs = attention_fused(fold_heads(inputs, axes, bv, inner, a), scale_, causal_,
                                            has_mask_, has_sinks_, output_lse_, a.s);
  int n_q = slice_dim(inputs[0], axes[0], 1);
  int pos = 1 + inner;
  // out and lse both have the folded head axis at 1.
  for (array& o : outs) {
    o = split_axis(o, 1, inner ? n_q : bv, inner ? bv : n_q, a.s);
  }
  return {outs, std::vector<int>(outs.size(), pos)};
}

// The backward's own derivatives go through its composite, which does not read lse (an lse
// input gets a zero cotangent, and its tangent is not read): see attention_backward_reference.
std::vector<array> ScaledDotProductAttentionVJP::jvp(const std::vector<array>& primals,
                                                     const std::vector<array>& tangents,
                                                     const std::vector<int>& argnums) {
  AttnSpec a{scale_, causal_, has_mask_, has_sinks_, stream(), has_lse_};
  auto f = [a](const std::vector<array>& in) { return attention_backward_reference(in, a); };
  return attention_jvp(f, primals, tangents, argnums, a);
}

std::vector<array> ScaledDotProductAttentionVJP::vjp(const std::vector<array>& primals,
                                                     const std::vector<array>& cotangents,
                                                     const std::vector<int>& argnums,
                                                     const std::vector<array>&) {
  AttnSpec a{scale_, causal_, has_mask_, has_sinks_, stream(), has_lse_};
  auto f = [a](const std::vector<array>& in) { return attention_backward_reference(in, a); };
  return attention_vjp(f, primals, cotangents, argnums, a);
}

// lse, when given, is folded like the queries, so the mapped backward reads it too.
Rules ScaledDotProductAttentionVJP::vmap(const std::vector<array>& inputs,
                                         const std::vector<int>& axes) {
  AttnSpec a{scale_, causal_, has_mask_, has_sinks_, stream(), has_lse_};
  int bv = batch_size(inputs, axes);
  std::vector<array> grads = attention_vjp_fused(fold_heads(inputs, axes, bv, false, a), a);
  std::vector<array> out;
  for (size_t i = 0; i < grads.size(); ++i) {
    int head = i < 3 ? 1 : 0;
    const array& x = inputs[i < 3 ? i : a.sinks_index()];
    int ax = axes[i < 3 ? i : a.sinks_index()];
    out.push_back(split_axis(grads[i], head, bv, slice_dim(x, ax, head), a.s));
  }
  std::vector<int> out_axes = {1, 1, 1};
  out_axes.resize(out.size(), 0);
  return {out, out_axes};
}

std::vector<array> attention_fused(std::vector<array> inputs, float scale, bool causal,
                                   bool has_mask, bool has_sinks, bool output_lse, Stream s) {
  const array& q = inputs[0];
  std::vector<Shape> shapes = {{q.shape(0), q.shape(1), q.shape(2), inputs[2].shape(3)}};
  std::vector<Dtype> dtypes = {q.dtype()};
  if (output_lse) {
    shapes.push_back({q.shape(0), q.shape(1), q.shape(2)});
    dtypes.push_back(float32);
  }
  auto prim = std::make_shared<ScaledDotProductAttention>(s, scale, causal, has_mask, has_sinks,
                                                          output_lse);
  return array::make_arrays(std::move(shapes), dtypes, std::move(prim), std::move(inputs));
}

std::vector<array> attention_composite(const std::vector<array>& inputs, float scale, bool causal,
                                       bool has_mask, bool has_sinks, bool with_lse, Stream s) {
  return attention_reference(inputs, AttnSpec{scale, causal, has_mask, has_sinks, s}, with_lse);
}

std::vector<array> attention_vjp_composite(const std::vector<array>& inputs, float scale,
                                           bool causal, bool has_mask, bool has_sinks, Stream s) {
  return attention_backward_reference(inputs, AttnSpec{scale, causal, has_mask, has_sinks, s});
}

// ---------------------------------------------------------------------------- cross entropy

namespace {

// (..., C) booleans: class c is row's target.
array one_hot_mask(const array& targets, int classes, Stream s) {
  return equal(expand_dims(targets, -1, s), arange(0, classes, 1, targets.dtype(), s), s);
}

// CrossEntropyVJP as ops, {x, t, lse, g} -> {dx}. The softmax is recomputed from x rather
// than read from lse, so derivatives of the backward reach x (lse only ever equals
// logsumexp(x): it is CrossEntropy's second output and gets no cotangent of its own).
ArrayFn cross_entropy_backward_fn(Stream s) {
  return [s](const std::vector<array>& in) {
    const array& x = in[0];
    array p = softmax(astype(x, accumulation_dtype(x.dtype()), s), std::vector<int>{-1}, true, s);
    array d =
        where(one_hot_mask(in[1], x.shape(-1), s), subtract(p, array(1.0, p.dtype()), s), p, s);
    array g = astype(expand_dims(in[3], -1, s), p.dtype(), s);
    return std::vector<array>{astype(multiply(d, g, s), x.dtype(), s)};
  };
}

}  // namespace

// d lse = sum(softmax * dx), d loss = d lse - dx[target]; targets have no tangent.
std::vector<array> CrossEntropy::jvp(const std::vector<array>& primals,
                                     const std::vector<array>& tangents,
                                     const std::vector<int>& argnums) {
  Stream s = stream();
  const array& x = primals[0];
  const array& t = primals[1];
  Dtype acc = accumulation_dtype(x.dtype());
  for (size_t k = 0; k < argnums.size(); ++k) {
    if (argnums[k] != 0) {
      continue;
    }
    array lse = cross_entropy_parts(x, t, s)[1];
    array tx = astype(tangents[k], acc, s);
    array p = exp(subtract(astype(x, acc, s), expand_dims(lse, -1, s), s), s);
    array d_lse = sum(multiply(p, tx, s), -1, false, s);
    array picked =
        sum(where(one_hot_mask(t, x.shape(-1), s), tx, array(0.0, acc), s), -1, false, s);
    return {astype(subtract(d_lse, picked, s), float32, s), d_lse};
  }
  return {zeros(t.shape(), float32, s), zeros(t.shape(), acc, s)};
}

// The lse output is internal (the op returns the loss only), so its cotangent is ignored.
std::vector<array> CrossEntropy::vjp(const std::vector<array>& primals,
                                     const std::vector<array>& cotangents,
                                     const std::vector<int>& argnums,
                                     const std::vector<array>& outputs) {
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(
        a == 0 ? cross_entropy_vjp(primals[0], primals[1], outputs[1], cotangents[0], stream())
               : zeros_like(primals[1], stream()));
  }
  return out;
}

// The kernels take any leading axes: the mapped axes move to the front.
Rules CrossEntropy::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  int bv = batch_size(inputs, axes);
  array x = batch_at(inputs[0], axes[0], bv, 0, s);
  array t = batch_at(inputs[1], axes[1], bv, 0, s);
  return {cross_entropy_parts(x, t, s), {0, 0}};
}

std::vector<array> CrossEntropyVJP::jvp(const std::vector<array>& primals,
                                        const std::vector<array>& tangents,
                                        const std::vector<int>& argnums) {
  return composite_jvp(cross_entropy_backward_fn(stream()), primals, tangents, argnums);
}

std::vector<array> CrossEntropyVJP::vjp(const std::vector<array>& primals,
                                        const std::vector<array>& cotangents,
                                        const std::vector<int>& argnums,
                                        const std::vector<array>&) {
  return composite_vjp(cross_entropy_backward_fn(stream()), primals, cotangents, argnums);
}

Rules CrossEntropyVJP::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  int bv = batch_size(inputs, axes);
  std::vector<array> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(batch_at(inputs[i], axes[i], bv, 0, s));
  }
  return {{cross_entropy_vjp(in[0], in[1], in[2], in[3], s)}, {0}};
}

// ---------------------------------------------------------------------------- adam update

namespace {

// AdamUpdate as ops in float32 (float64 for float64 parameters), {p_i, g_i, m_i, v_i (i < n),
// lr, c1, c2} -> {p'_i, m'_i, v'_i}: what its rules differentiate and map.
ArrayFn adam_update_fn(double b1, double b2, double eps, double wd, Stream s) {
  return [=](const std::vector<array>& in) {
    const size_t n = AdamUpdate::parameters(in);
    std::vector<array> ps, ms, vs;
    for (size_t i = 0; i < n; ++i) {
      Dtype t = in[i].dtype(), acc = accumulation_dtype(t);
      auto up = [&](const array& x) { return astype(x, acc, s); };
      auto c = [&](double x) { return array(x, acc); };
      array p = up(in[i]), g = up(in[n + i]), lr = up(in[4 * n]);
      array m = add(multiply(c(b1), up(in[2 * n + i]), s), multiply(c(1.0 - b1), g, s), s);
      array v =
          add(multiply(c(b2), up(in[3 * n + i]), s), multiply(c(1.0 - b2), square(g, s), s), s);
      array step = divide(divide(m, up(in[4 * n + 1]), s),
                          add(sqrt(divide(v, up(in[4 * n + 2]), s), s), c(eps), s), s);
      array decayed = multiply(p, subtract(c(1.0), multiply(lr, c(wd), s), s), s);
      ps.push_back(astype(subtract(decayed, multiply(lr, step, s), s), t, s));
      ms.push_back(astype(m, t, s));
      vs.push_back(astype(v, t, s));
    }
    ps.insert(ps.end(), ms.begin(), ms.end());
    ps.insert(ps.end(), vs.begin(), vs.end());
    return ps;
  };
}

}  // namespace

std::vector<array> AdamUpdate::jvp(const std::vector<array>& primals,
                                   const std::vector<array>& tangents,
                                   const std::vector<int>& argnums) {
  return composite_jvp(adam_update_fn(beta1_, beta2_, eps_, weight_decay_, stream()), primals,
                       tangents, argnums);
}

std::vector<array> AdamUpdate::vjp(const std::vector<array>& primals,
                                   const std::vector<array>& cotangents,
                                   const std::vector<int>& argnums, const std::vector<array>&) {
  return composite_vjp(adam_update_fn(beta1_, beta2_, eps_, weight_decay_, stream()), primals,
                       cotangents, argnums);
}

// Elementwise: every parameter's inputs batched along axis 0 (scalars become per-batch scalars,
// which the kernels do not take, so those go through the composite).
Rules AdamUpdate::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  const size_t n = parameters(inputs);
  bool scalars_mapped = axes[4 * n] >= 0 || axes[4 * n + 1] >= 0 || axes[4 * n + 2] >= 0;
  if (scalars_mapped) {
    return composite_vmap(adam_update_fn(beta1_, beta2_, eps_, weight_decay_, s), inputs, axes);
  }
  int bv = batch_size(inputs, axes);
  std::vector<array> in[4];
  for (size_t i = 0; i < 4 * n; ++i) {
    in[i / n].push_back(batch_at(inputs[i], axes[i], bv, 0, s));
  }
  return {adam_update(in[0], in[1], in[2], in[3], inputs[4 * n], inputs[4 * n + 1],
                      inputs[4 * n + 2], beta1_, beta2_, eps_, weight_decay_, s),
          std::vector<int>(3 * n, 0)};
}

// ----------------------------------------------------------------------------- sgd update

namespace {

// SgdUpdate as ops in float32 (float64 for float64 parameters), {p_i, g_i, [v_i], lr} ->
// {p'_i, [v'_i]}: what its rules differentiate and map.
ArrayFn sgd_update_fn(double mu, double damp, double wd, bool nesterov, Stream s) {
  const bool momentum = mu > 0;
  const size_t per = momentum ? 3 : 2;
  return [=](const std::vector<array>& in) {
    const size_t n = (in.size() - 1) / per;
    std::vector<array> ps, vs;
    for (size_t i = 0; i < n; ++i) {
      Dtype t = in[i].dtype(), acc = accumulation_dtype(t);
      auto up = [&](const array& x) { return astype(x, acc, s); };
      auto c = [&](double x) { return array(x, acc); };
      array p = up(in[i]), lr = up(in.back());
      array g = add(up(in[n + i]), multiply(c(wd), p, s), s);
      array u = g;
      if (momentum) {
        array v = add(multiply(c(mu), up(in[2 * n + i]), s), multiply(c(1.0 - damp), g, s), s);
        u = nesterov ? add(g, multiply(c(mu), v, s), s) : v;
        vs.push_back(astype(v, t, s));
      }
      ps.push_back(astype(subtract(p, multiply(lr, u, s), s), t, s));
    }
    ps.insert(ps.end(), vs.begin(), vs.end());
    return ps;
  };
}

}  // namespace

std::vector<array> SgdUpdate::jvp(const std::vector<array>& primals,
                                  const std::vector<array>& tangents,
                                  const std::vector<int>& argnums) {
  return composite_jvp(sgd_update_fn(momentum_, dampening_, weight_decay_, nesterov_, stream()),
                       primals, tangents, argnums);
}

std::vector<array> SgdUpdate::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents,
                                  const std::vector<int>& argnums, const std::vector<array>&) {
  return composite_vjp(sgd_update_fn(momentum_, dampening_, weight_decay_, nesterov_, stream()),
                       primals, cotangents, argnums);
}

// Elementwise, as AdamUpdate's: arrays batched along axis 0, a mapped learning rate through
// the composite.
Rules SgdUpdate::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  if (axes.back() >= 0) {
    return composite_vmap(sgd_update_fn(momentum_, dampening_, weight_decay_, nesterov_, s), inputs,
                          axes);
  }
  const size_t n = parameters(inputs);
  int bv = batch_size(inputs, axes);
  std::vector<array> in[3];
  for (size_t i = 0; i + 1 < inputs.size(); ++i) {
    in[i / n].push_back(batch_at(inputs[i], axes[i], bv, 0, s));
  }
  return {sgd_update(in[0], in[1], in[2], inputs.back(), momentum_, dampening_, weight_decay_,
                     nesterov_, s),
          std::vector<int>(outputs_per_parameter() * n, 0)};
}

}  // namespace mlx::core::fast
