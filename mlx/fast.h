// Fused composites with dedicated kernels (mlx::core::fast).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core::fast {

// x * rsqrt(mean(x^2, -1) + eps) * weight over the last axis.
array rms_norm(const array& x, const std::optional<array>& weight, float eps,
               StreamOrDevice s = {});

// (x - mean) * rsqrt(var + eps) * weight + bias over the last axis.
array layer_norm(const array& x, const std::optional<array>& weight,
                 const std::optional<array>& bias, float eps, StreamOrDevice s = {});

// Rotary positional encoding of the first `dims` features of x: (B, ..., T, D), position
// (offset + t) * scale along T. Frequencies base^(-2i/dims), or 1 / freqs[i] when freqs is
// given (then base must be empty). `traditional` rotates consecutive pairs, otherwise the
// two halves of the rotated features. An array offset is a scalar or one entry per batch.
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           int offset, const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           const array& offset, const std::optional<array>& freqs = std::nullopt,
           StreamOrDevice s = {});

// softmax(scale * q @ k^T + mask) @ v for q: (B, N_q, T_q, D), k: (B, N_kv, T_kv, D),
// v: (B, N_kv, T_kv, D_v), N_q a multiple of N_kv (grouped-query attention). mask_mode is
// "" (no mask, or mask_arr when given), "causal" (query i sees keys up to
// i + T_kv - T_q) or "array" (mask_arr: boolean keep-mask or additive, broadcastable to
// (B, N_q, T_q, T_kv)). sinks (N_q,) add a per-head logit to each softmax denominator.
// Rows that see no key (and have no sink) are zeros, with zero gradients.
array scaled_dot_product_attention(const array& queries, const array& keys, const array& values,
                                   const float scale, const std::string& mask_mode = "",
                                   std::optional<array> mask_arr = {},
                                   const std::optional<array>& sinks = {}, StreamOrDevice s = {});

// Cross entropy with class indices: logsumexp(logits, -1) - logits[..., target], accumulated
// in float32 (float64 for float64 logits) and returned in float32 with the shape of `targets`
// (logits' shape without the last axis). One fused pass per row forward and one backward
// (softmax - one_hot, from the saved logsumexp). A target outside [0, C) gives a NaN loss and
// NaN gradients for its row: checking it eagerly would need the targets on the host.
array cross_entropy(const array& logits, const array& targets, StreamOrDevice s = {});

// One fused Adam step (AdamW with weight_decay > 0) of parameter p with gradient g and
// moments m, v, all of one shape and floating dtype: returns {p', m', v'} (the formulas are
// AdamUpdate's, primitives/fast.h). lr, c1 and c2 are scalars: the learning rate and the
// bias corrections 1 - beta1^step and 1 - beta2^step (1 for none). What the optimizers of
// mlx.optimizers run per parameter.
std::vector<array> adam_update(const array& p, const array& g, const array& m, const array& v,
                               const array& lr, const array& c1, const array& c2, double beta1,
                               double beta2, double eps, double weight_decay,
                               StreamOrDevice s = {});
// The same step for a bucket of parameters of one dtype (any shapes), as one primitive: returns
// {p'_1..p'_n, m'_1..m'_n, v'_1..v'_n}.
std::vector<array> adam_update(const std::vector<array>& p, const std::vector<array>& g,
                               const std::vector<array>& m, const std::vector<array>& v,
                               const array& lr, const array& c1, const array& c2, double beta1,
                               double beta2, double eps, double weight_decay,
                               StreamOrDevice s = {});

// One fused SGD step (with momentum, dampening, Nesterov and weight decay as
// mlx.optimizers.SGD) for a bucket of parameters of one floating dtype (any shapes) with their
// gradients and, when momentum > 0, velocities (ignored otherwise): returns {p'_1..p'_n}, then
// {v'_1..v'_n} with momentum (the formulas are SgdUpdate's, primitives/fast.h). lr is a scalar.
std::vector<array> sgd_update(const std::vector<array>& p, const std::vector<array>& g,
                              const std::vector<array>& v, const array& lr, double momentum,
                              double dampening, double weight_decay, bool nesterov,
                              StreamOrDevice s = {});

// The gated delta rule (Gated DeltaNet) over T steps. q, k: (B, T, Hk, Dk); v: (B, T, Hv, Dv)
// with Hv a multiple of Hk (value head h reads key head h / (Hv / Hk)); gamma: (B, T, Hv) or
// (B, T, Hv, Dk), decay factors in linear space; beta: (B, T, Hv); state: (B, Hv, Dv, Dk),
// zeros by default; mask: (B, T) booleans, false steps keep the state and output zeros. Per
// step: S = gamma * S; S += beta * (v - S k) k^T; y = S q. Returns {y (B, T, Hv, Dv) in q's
// dtype, final state in float32}; the recurrence runs in float32.
std::vector<array> gated_delta_update(const array& q, const array& k, const array& v,
                                      const array& gamma, const array& beta,
                                      const std::optional<array>& initial_state = std::nullopt,
                                      const std::optional<array>& mask = std::nullopt,
                                      StreamOrDevice s = {});

namespace detail {

// When scaled_dot_product_attention's fused primitive also outputs each query row's
// log-sum-exp (ScaledDotProductAttention's `output_lse`, read by its backward): where it is
// built on a GPU stream while a transform traces (grad, vjp, value_and_grad, compile, vmap,
// jvp, export; detail::in_tracing) by default, wherever a transform traces, or never. The
// hook for tests, which force it on CPU streams; plain (untraced) calls never ask for it.
enum class AttentionLse { gpu, always, never };
void set_attention_lse(AttentionLse mode);
AttentionLse attention_lse();

// scaled_dot_product_attention's fused primitive with `output_lse`, on any stream, traced or
// not: {out, lse} with lse float32 (B, N_q, T_q) (ScaledDotProductAttention). For tests.
std::vector<array> scaled_dot_product_attention_with_lse(const array& queries, const array& keys,
                                                         const array& values, float scale,
                                                         const std::string& mask_mode = "",
                                                         std::optional<array> mask_arr = {},
                                                         const std::optional<array>& sinks = {},
                                                         StreamOrDevice s = {});

}  // namespace detail

}  // namespace mlx::core::fast
