#include "mlx/fast.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

#include "mlx/ops/creation.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/fast.h"
#include "mlx/primitives/shape.h"
#include "mlx/utils.h"

namespace mlx::core::fast {

namespace {

// Checks an optional per-feature parameter (weight or bias) of a norm over x's last axis.
void check_feature_param(const std::optional<array>& p, const array& x, const char* op,
                         const char* what) {
  if (!p) {
    return;
  }
  if (p->ndim() != 1) {
    throw std::invalid_argument(
        msg("[", op, "] ", what, " must have 1 dimension but has ", p->ndim(), " dimensions."));
  }
  if (p->shape(0) != x.shape(-1)) {
    throw std::invalid_argument(msg("[", op, "] ", what,
                                    " must have the same size as the last dimension of x (",
                                    x.shape(-1), ") but has ", p->shape(0), " elements."));
  }
}

// The dtype of a norm's result; x and the given parameters are cast to it.
Dtype norm_dtype(const array& x, std::initializer_list<const std::optional<array>*> params,
                 const char* op) {
  if (x.ndim() == 0) {
    throw std::invalid_argument(
        msg("[", op, "] Input must have at least 1 dimension but got input with 0 dimensions."));
  }
  Dtype t = x.dtype();
  for (auto* p : params) {
    if (*p) {
      t = promote_types(t, (*p)->dtype());
    }
  }
  if (!is_floating_point(t)) {
    throw std::invalid_argument(msg("[", op, "] Received unsupported type ", t, "."));
  }
  return t;
}

}  // namespace

array rms_norm(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s) {
  Dtype t = norm_dtype(x, {&weight}, "rms_norm");
  check_feature_param(weight, x, "rms_norm", "weight");
  std::vector<array> inputs = {astype(x, t, s)};
  if (weight) {
    inputs.push_back(astype(*weight, t, s));
  }
  return array(x.shape(), t, std::make_shared<RMSNorm>(to_stream(s), eps, weight.has_value()),
               std::move(inputs));
}

array layer_norm(const array& x, const std::optional<array>& weight,
                 const std::optional<array>& bias, float eps, StreamOrDevice s) {
  Dtype t = norm_dtype(x, {&weight, &bias}, "layer_norm");
  check_feature_param(weight, x, "layer_norm", "weight");
  check_feature_param(bias, x, "layer_norm", "bias");
  std::vector<array> inputs = {astype(x, t, s)};
  for (auto* p : {&weight, &bias}) {
    if (*p) {
      inputs.push_back(astype(**p, t, s));
    }
  }
  auto prim = std::make_shared<LayerNorm>(to_stream(s), eps, weight.has_value(), bias.has_value());
  return array(x.shape(), t, std::move(prim), std::move(inputs));
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           const array& offset, const std::optional<array>& freqs, StreamOrDevice s) {
  if (x.ndim() < 3) {
    throw std::invalid_argument(
        msg("[rope] Input must have at least 3 dimensions but got input with ", x.ndim(),
            " dimensions."));
  }
  if (!is_floating_point(x.dtype())) {
    throw std::invalid_argument(
        msg("[rope] Input must be a floating point type but got ", x.dtype(), "."));
  }
  if (dims <= 0 || dims % 2 != 0) {
    throw std::invalid_argument(
        msg("[rope] dims must be a positive multiple of 2 but got ", dims, "."));
  }
  if (dims > x.shape(-1)) {
    throw std::invalid_argument(
        msg("[rope] dims (", dims, ") must not exceed the feature dimension ", x.shape(-1), "."));
  }
  if (base.has_value() == freqs.has_value()) {
    throw std::invalid_argument("[rope] Exactly one of base or freqs must be provided.");
  }
  if (freqs && (freqs->ndim() != 1 || freqs->shape(0) != dims / 2)) {
    throw std::invalid_argument(msg("[rope] freqs must be one dimensional with size dims / 2 = ",
                                    dims / 2, " but got shape ", freqs->shape(), "."));
  }
  if (!is_integral(offset.dtype()) || offset.dtype() == bool_) {
    throw std::invalid_argument(
        msg("[rope] offset must be an integer but got ", offset.dtype(), "."));
  }
  if (offset.ndim() > 1 ||
      (offset.ndim() == 1 && offset.size() != 1 && offset.shape(0) != x.shape(0))) {
    throw std::invalid_argument(
        msg("[rope] offset must be a scalar or a vector with one entry per batch element (",
            x.shape(0), ") but has shape ", offset.shape(), "."));
  }
  if (freqs && is_complex(freqs->dtype())) {
    throw std::invalid_argument("[rope] freqs must be real.");
  }
  std::vector<array> inputs = {x, astype(offset, int32, s)};
  if (freqs) {
    inputs.push_back(astype(*freqs, float32, s));
  }
  auto prim = std::make_shared<RoPE>(to_stream(s), dims, traditional, base.value_or(0.0f), scale,
                                     freqs.has_value());
  return array(x.shape(), x.dtype(), std::move(prim), std::move(inputs));
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           int offset, const std::optional<array>& freqs, StreamOrDevice s) {
  return rope(x, dims, traditional, base, scale, array(offset, int32), freqs, s);
}

bool attention_gpu_kernel_applies(Dtype dtype, int head_dim, int value_dim, bool has_sinks) {
  static const bool enabled = [] {
    const char* v = std::getenv("MLX_SDPA_FUSED");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled && (dtype == float16 || dtype == bfloat16) && head_dim == value_dim &&
         (head_dim == 64 || head_dim == 80 || head_dim == 96 || head_dim == 128) && !has_sinks;
}

namespace {

// The op's checked arguments: the primitive's inputs (cast to the common dtype t, a mask
// broadcast to the scores' shape) and its parameters.
struct AttentionCall {
  std::vector<array> inputs;
  Dtype t;
  bool causal, has_mask, has_sinks;
  Stream stream;
};

AttentionCall check_attention(const array& queries, const array& keys, const array& values,
                              const std::string& mask_mode, const std::optional<array>& mask_arr,
                              const std::optional<array>& sinks, StreamOrDevice s) {
  constexpr const char* op = "[scaled_dot_product_attention]";
  if (queries.ndim() != 4 || keys.ndim() != 4 || values.ndim() != 4) {
    throw std::invalid_argument(
        msg(op, " queries, keys and values must have 4 dimensions (B, N, T, D); got shapes ",
            queries.shape(), ", ", keys.shape(), " and ", values.shape(), "."));
  }
  int B = queries.shape(0), n_q = queries.shape(1), t_q = queries.shape(2);
  int n_kv = keys.shape(1), t_kv = keys.shape(2);
  if (keys.shape(0) != B || values.shape(0) != B || values.shape(1) != n_kv ||
      values.shape(2) != t_kv || keys.shape(3) != queries.shape(3)) {
    throw std::invalid_argument(
        msg(op, " Incompatible shapes: queries ", queries.shape(), ", keys ", keys.shape(),
            " and values ", values.shape(),
            " must share the batch size, keys and values the heads and sequence length, and "
            "queries and keys the feature dimension."));
  }
  if (n_kv == 0 || n_q % n_kv != 0) {
    throw std::invalid_argument(msg(op, " The number of query heads (", n_q,
                                    ") must be a multiple of the number of key/value heads (", n_kv,
                                    ")."));
  }
  Dtype t = promote_types(queries.dtype(), promote_types(keys.dtype(), values.dtype()));
  if (!is_floating_point(t)) {
    throw std::invalid_argument(msg(op, " Received unsupported type ", t, "."));
  }
  bool causal = false;
  if (mask_mode == "causal") {
    if (mask_arr) {
      throw std::invalid_argument(
          msg(op, " A mask array cannot be combined with mask_mode \"causal\"."));
    }
    causal = true;
  } else if (mask_mode == "array") {
    if (!mask_arr) {
      throw std::invalid_argument(msg(op, " mask_mode \"array\" needs a mask array."));
    }
  } else if (!mask_mode.empty()) {
    throw std::invalid_argument(
        msg(op, " Invalid mask_mode \"", mask_mode, "\"; expected \"\", \"causal\" or \"array\"."));
  }
  Shape scores = {B, n_q, t_q, t_kv};
  std::vector<array> inputs = {astype(queries, t, s), astype(keys, t, s), astype(values, t, s)};
  if (mask_arr) {
    if (mask_arr->ndim() > 4) {
      throw std::invalid_argument(
          msg(op, " The mask can have at most 4 dimensions; got shape ", mask_arr->shape(), "."));
    }
    if (broadcast_shapes(mask_arr->shape(), scores, "scaled_dot_product_attention") != scores) {
      throw std::invalid_argument(msg(op, " Mask with shape ", mask_arr->shape(),
                                      " cannot be broadcast to the scores' shape ", scores, "."));
    }
    Dtype mt = mask_arr->dtype();
    if (mt != bool_ && promote_types(mt, t) != t) {
      throw std::invalid_argument(
          msg(op, " An additive mask of type ", mt, " must promote to the inputs' type ", t, "."));
    }
    inputs.push_back(broadcast_to(mt == bool_ ? *mask_arr : astype(*mask_arr, t, s), scores, s));
  }
  if (sinks) {
    if (sinks->ndim() != 1 || sinks->shape(0) != n_q) {
      throw std::invalid_argument(
          msg(op, " sinks must have shape (", n_q, ") but have shape ", sinks->shape(), "."));
    }
    if (!is_floating_point(promote_types(sinks->dtype(), t))) {
      throw std::invalid_argument(msg(op, " sinks must be real; got ", sinks->dtype(), "."));
    }
    inputs.push_back(astype(*sinks, t, s));
  }
  return {std::move(inputs), t, causal, mask_arr.has_value(), sinks.has_value(), to_stream(s)};
}

std::vector<array> fused_attention(AttentionCall c, float scale, bool with_lse) {
  return attention_fused(std::move(c.inputs), scale, c.causal, c.has_mask, c.has_sinks, with_lse,
                         c.stream);
}

std::atomic<detail::AttentionLse>& attention_lse_mode() {
  static std::atomic<detail::AttentionLse> mode{detail::AttentionLse::gpu};
  return mode;
}

// Whether a fused primitive built now on `s` outputs lse: only while a transform traces (its
// backward, if any, is then built from this forward), on GPU streams unless the hook says
// otherwise. The CPU backward does not read lse (fast_sdpa_vjp.cpp), so CPU streams skip it.
bool wants_lse(const Stream& s) {
  if (!core::detail::in_tracing()) {
    return false;
  }
  switch (attention_lse_mode().load(std::memory_order_relaxed)) {
    case detail::AttentionLse::always:
      return true;
    case detail::AttentionLse::never:
      return false;
    case detail::AttentionLse::gpu:
      break;
  }
  return s.device.type == Device::gpu;
}

}  // namespace

namespace detail {

void set_attention_lse(AttentionLse mode) {
  attention_lse_mode().store(mode, std::memory_order_relaxed);
}

AttentionLse attention_lse() { return attention_lse_mode().load(std::memory_order_relaxed); }

std::vector<array> scaled_dot_product_attention_with_lse(const array& queries, const array& keys,
                                                         const array& values, float scale,
                                                         const std::string& mask_mode,
                                                         std::optional<array> mask_arr,
                                                         const std::optional<array>& sinks,
                                                         StreamOrDevice s) {
  return fused_attention(check_attention(queries, keys, values, mask_mode, mask_arr, sinks, s),
                         scale, true);
}

}  // namespace detail

array scaled_dot_product_attention(const array& queries, const array& keys, const array& values,
                                   const float scale, const std::string& mask_mode,
                                   std::optional<array> mask_arr, const std::optional<array>& sinks,
                                   StreamOrDevice s) {
  AttentionCall c = check_attention(queries, keys, values, mask_mode, mask_arr, sinks, s);
  if (c.stream.device.type == Device::gpu &&
      !attention_gpu_kernel_applies(c.t, queries.shape(3), values.shape(3), c.has_sinks)) {
    // Matmuls and a softmax on the GPU (differentiated as such) beat the CPU kernel's transfers.
    return attention_composite(c.inputs, scale, c.causal, c.has_mask, c.has_sinks, false,
                               c.stream)[0];
  }
  bool with_lse = wants_lse(c.stream);
  return fused_attention(std::move(c), scale, with_lse)[0];
}

std::vector<array> cross_entropy_parts(const array& logits, const array& targets, Stream s) {
  Dtype lse_dtype = accumulation_dtype(logits.dtype());
  return array::make_arrays({targets.shape(), targets.shape()}, {float32, lse_dtype},
                            std::make_shared<CrossEntropy>(s), {logits, targets});
}

array cross_entropy_vjp(const array& logits, const array& targets, const array& lse,
                        const array& cotangent, Stream s) {
  return array(logits.shape(), logits.dtype(), std::make_shared<CrossEntropyVJP>(s),
               {logits, targets, lse, astype(cotangent, float32, s)});
}

array cross_entropy(const array& logits, const array& targets, StreamOrDevice s) {
  if (logits.ndim() < 1) {
    throw std::invalid_argument("[cross_entropy] logits must have at least one dimension.");
  }
  if (!is_floating_point(logits.dtype())) {
    throw std::invalid_argument(
        msg("[cross_entropy] logits must be floating point; got ", logits.dtype(), "."));
  }
  if (!issubdtype(targets.dtype(), DtypeCategory::integer)) {
    throw std::invalid_argument(
        msg("[cross_entropy] targets must be integer class indices; got ", targets.dtype(), "."));
  }
  Shape expect(logits.shape().begin(), logits.shape().end() - 1);
  if (targets.shape() != expect) {
    throw std::invalid_argument(msg("[cross_entropy] targets must have shape ", expect,
                                    " (logits without the last axis); got ", targets.shape(), "."));
  }
  if (logits.shape(-1) == 0) {
    throw std::invalid_argument(msg(
        "[cross_entropy] logits must have at least one class; got shape ", logits.shape(), "."));
  }
  // Half-precision logits widened to float32 for the loss (the usual mixed-precision code):
  // the kernels read half precision and compute in float32 anyway, so they read the source and
  // the float32 copy (twice the logits' bytes, often the step's largest array) is never made.
  // The same values and, through the cotangent's rounding to the source dtype, gradients.
  if (logits.dtype() == float32 && logits.status() == array::Status::unscheduled &&
      logits.has_primitive() && dynamic_cast<const AsType*>(&logits.primitive()) != nullptr) {
    const array& source = logits.inputs()[0];
    if (source.dtype() == float16 || source.dtype() == bfloat16) {
      return cross_entropy_parts(source, targets, to_stream(s))[0];
    }
  }
  return cross_entropy_parts(logits, targets, to_stream(s))[0];
}

namespace {

// The checks of a bucketed optimizer step: as many of each list as parameters, one floating
// dtype, each gradient and state array like its parameter; scalars of size 1.
void check_bucket(const char* op, const std::vector<array>& p,
                  std::initializer_list<const std::vector<array>*> like_p,
                  std::initializer_list<const array*> scalars) {
  if (p.empty() || std::any_of(like_p.begin(), like_p.end(),
                               [&](const auto* l) { return l->size() != p.size(); })) {
    std::ostringstream sizes;
    for (const auto* l : like_p) {
      sizes << " " << l->size();
    }
    throw std::invalid_argument(msg(op,
                                    " Expected as many gradients and state arrays as "
                                    "parameters (",
                                    p.size(), "); got", sizes.str(), "."));
  }
  const Dtype dtype = p[0].dtype();
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        msg(op, " The parameter must be real floating point; got ", dtype, "."));
  }
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i].dtype() != dtype) {
      throw std::invalid_argument(msg(op, " The parameters of one step must share a dtype; got ",
                                      dtype, " and ", p[i].dtype(), "."));
    }
    for (const auto* l : like_p) {
      const array& a = (*l)[i];
      if (a.shape() != p[i].shape() || a.dtype() != dtype) {
        throw std::invalid_argument(
            msg(op, " The gradient and state must match the parameter (shape ", p[i].shape(), ", ",
                dtype, "); got shape ", a.shape(), " and ", a.dtype(), "."));
      }
    }
  }
  for (const array* a : scalars) {
    if (a->size() != 1) {
      throw std::invalid_argument(
          msg(op, " The learning rate and bias corrections must be scalars; got shape ", a->shape(),
              "."));
    }
  }
}

// Inputs {groups..., scalars as 0-d arrays of the accumulation dtype}; the outputs are the
// primitive's (output_shapes), in the parameters' dtype.
std::vector<array> bucket_step(std::initializer_list<const std::vector<array>*> groups,
                               std::initializer_list<const array*> scalars,
                               std::shared_ptr<Primitive> prim, Stream st) {
  const Dtype dtype = (*groups.begin())->front().dtype(), scalar_dtype = accumulation_dtype(dtype);
  std::vector<array> in;
  for (const auto* group : groups) {
    in.insert(in.end(), group->begin(), group->end());
  }
  for (const array* a : scalars) {
    in.push_back(astype(reshape(*a, {}, st), scalar_dtype, st));
  }
  std::vector<Shape> shapes = prim->output_shapes(in);
  std::vector<Dtype> dtypes(shapes.size(), dtype);
  return array::make_arrays(std::move(shapes), dtypes, std::move(prim), std::move(in));
}

}  // namespace

std::vector<array> adam_update(const std::vector<array>& p, const std::vector<array>& g,
                               const std::vector<array>& m, const std::vector<array>& v,
                               const array& lr, const array& c1, const array& c2, double beta1,
                               double beta2, double eps, double weight_decay, StreamOrDevice s) {
  check_bucket("[adam_update]", p, {&g, &m, &v}, {&lr, &c1, &c2});
  Stream st = to_stream(s);
  return bucket_step({&p, &g, &m, &v}, {&lr, &c1, &c2},
                     std::make_shared<AdamUpdate>(st, beta1, beta2, eps, weight_decay), st);
}

std::vector<array> sgd_update(const std::vector<array>& p, const std::vector<array>& g,
                              const std::vector<array>& v, const array& lr, double momentum,
                              double dampening, double weight_decay, bool nesterov,
                              StreamOrDevice s) {
  constexpr const char* op = "[sgd_update]";
  if (nesterov && (momentum <= 0 || dampening != 0)) {
    throw std::invalid_argument(
        msg(op, " Nesterov momentum needs momentum > 0 and no dampening; got momentum ", momentum,
            " and dampening ", dampening, "."));
  }
  Stream st = to_stream(s);
  auto prim = std::make_shared<SgdUpdate>(st, momentum, dampening, weight_decay, nesterov);
  if (!prim->has_momentum()) {
    check_bucket(op, p, {&g}, {&lr});
    return bucket_step({&p, &g}, {&lr}, std::move(prim), st);
  }
  check_bucket(op, p, {&g, &v}, {&lr});
  return bucket_step({&p, &g, &v}, {&lr}, std::move(prim), st);
}

std::vector<array> adam_update(const array& p, const array& g, const array& m, const array& v,
                               const array& lr, const array& c1, const array& c2, double beta1,
                               double beta2, double eps, double weight_decay, StreamOrDevice s) {
  return adam_update(std::vector<array>{p}, {g}, {m}, {v}, lr, c1, c2, beta1, beta2, eps,
                     weight_decay, s);
}

}  // namespace mlx::core::fast
