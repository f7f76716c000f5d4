// mx.fast: fused normalization, rotary encoding and attention.
#include "mlx/fast.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <algorithm>

#include "mlx/utils.h"
#include "python/src/bindings.h"

namespace nb = nanobind;
using namespace mlx::core;

namespace {

// A kernel whose backend is missing: it exists, and calling it raises `message`.
struct UnavailableKernel {
  std::string name;
  std::string message;
};

}  // namespace

namespace {

// A bucketed optimizer step over lists that may mix dtypes and hold what it cannot fuse: the
// parameters whose state arrays (like_p) match them, grouped by dtype in first-seen order, each
// group one step(groups) returning n_out lists of outputs back to back. Returns n_out Python
// lists aligned with p, None where a parameter was left out (and for state a step without it
// does not return).
template <typename Step>
nb::tuple fused_by_dtype(const char* op, const std::vector<array>& p,
                         std::initializer_list<const std::vector<array>*> like_p, size_t n_out,
                         Step&& step) {
  for (const auto* l : like_p) {
    if (l->size() != p.size()) {
      throw std::invalid_argument(msg(op,
                                      " Expected as many gradients and state arrays as "
                                      "parameters (",
                                      p.size(), "); got ", l->size(), "."));
    }
  }
  std::vector<std::pair<Dtype, std::vector<size_t>>> groups;
  for (size_t i = 0; i < p.size(); ++i) {
    const bool fusable =
        is_floating_point(p[i].dtype()) &&
        std::all_of(like_p.begin(), like_p.end(), [&](const std::vector<array>* l) {
          return (*l)[i].dtype() == p[i].dtype() && (*l)[i].shape() == p[i].shape();
        });
    if (!fusable) {
      continue;
    }
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& gr) { return gr.first == p[i].dtype(); });
    if (it == groups.end()) {
      it = groups.insert(groups.end(), {p[i].dtype(), {}});
    }
    it->second.push_back(i);
  }
  std::vector<nb::list> out(3);
  for (auto& o : out) {
    for (size_t i = 0; i < p.size(); ++i) {
      o.append(nb::none());
    }
  }
  for (const auto& [dtype, members] : groups) {
    std::vector<std::vector<array>> in(like_p.size() + 1);
    for (size_t i : members) {
      in[0].push_back(p[i]);
      size_t k = 1;
      for (const auto* l : like_p) {
        in[k++].push_back((*l)[i]);
      }
    }
    auto res = step(in);
    for (size_t j = 0; j < members.size(); ++j) {
      for (size_t k = 0; k < n_out; ++k) {
        out[k][members[j]] = nb::cast(res[k * members.size() + j]);
      }
    }
  }
  return n_out == 3 ? nb::make_tuple(out[0], out[1], out[2]) : nb::make_tuple(out[0], out[1]);
}

// scaled_dot_product_attention's mask argument (None, "causal" or an array) as the C++ op's
// mask_mode and mask array.
std::pair<std::string, std::optional<array>> attention_mask(nb::handle mask) {
  if (nb::isinstance<nb::str>(mask)) {
    std::string mode = nb::cast<std::string>(mask);
    if (mode != "causal") {
      throw std::invalid_argument(msg("[scaled_dot_product_attention] Invalid mask '", mode,
                                      "'; the only supported string mask is 'causal'."));
    }
    return {mode, std::nullopt};
  }
  if (nb::isinstance<array>(mask)) {
    return {"array", nb::cast<array>(mask)};
  }
  if (!mask.is_none()) {
    throw nb::type_error(
        "[scaled_dot_product_attention] mask must be None, 'causal' or an "
        "array.");
  }
  return {"", std::nullopt};
}

}  // namespace

void init_fast(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("fast", "Fused operations with dedicated kernels.");
  m.def(
      "rms_norm",
      [](const array& x, std::optional<array> weight, float eps, StreamOrDevice s) {
        return fast::rms_norm(x, weight, eps, s);
      },
      nb::arg("x"), nb::arg("weight").none(), nb::arg("eps"), nb::kw_only(),
      nb::arg("stream") = nb::none(), "RMS normalization over the last axis, times weight.");
  m.def(
      "layer_norm",
      [](const array& x, std::optional<array> weight, std::optional<array> bias, float eps,
         StreamOrDevice s) { return fast::layer_norm(x, weight, bias, eps, s); },
      nb::arg("x"), nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("eps"), nb::kw_only(),
      nb::arg("stream") = nb::none(),
      "Layer normalization over the last axis, times weight plus bias.");
  m.def(
      "rope",
      [](const array& a, int dims, bool traditional, std::optional<float> base, float scale,
         std::variant<int, array> offset, std::optional<array> freqs, StreamOrDevice s) {
        if (auto* o = std::get_if<int>(&offset)) {
          return fast::rope(a, dims, traditional, base, scale, *o, freqs, s);
        }
        return fast::rope(a, dims, traditional, base, scale, std::get<array>(offset), freqs, s);
      },
      nb::arg("a"), nb::arg("dims"), nb::kw_only(), nb::arg("traditional"), nb::arg("base").none(),
      nb::arg("scale"), nb::arg("offset"), nb::arg("freqs") = nb::none(),
      nb::arg("stream") = nb::none(), "Rotary positional encoding of the first dims features.");
  m.def(
      "scaled_dot_product_attention",
      [](const array& q, const array& k, const array& v, float scale, nb::handle mask,
         std::optional<array> sinks, bool force_fused, StreamOrDevice s) {
        // Every path of this build is the fused kernel, so force_fused changes nothing.
        (void)force_fused;
        auto [mode, mask_arr] = attention_mask(mask);
        return fast::scaled_dot_product_attention(q, k, v, scale, mode, mask_arr, sinks, s);
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::kw_only(), nb::arg("scale"),
      nb::arg("mask").none() = nb::none(), nb::arg("sinks") = nb::none(),
      nb::arg("force_fused") = false, nb::arg("stream") = nb::none(),
      "softmax(scale * q @ k^T + mask) @ v, with grouped-query heads, 'causal' or array masks and "
      "per-head attention sinks.");
  m.def(
      "_scaled_dot_product_attention_with_lse",
      [](const array& q, const array& k, const array& v, float scale, nb::handle mask,
         std::optional<array> sinks, StreamOrDevice s) {
        auto [mode, mask_arr] = attention_mask(mask);
        auto outs = fast::detail::scaled_dot_product_attention_with_lse(q, k, v, scale, mode,
                                                                        mask_arr, sinks, s);
        return nb::make_tuple(outs[0], outs[1]);
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::kw_only(), nb::arg("scale"),
      nb::arg("mask").none() = nb::none(), nb::arg("sinks") = nb::none(),
      nb::arg("stream") = nb::none(),
      "Testing: (out, lse) of the fused attention primitive asked for its lse output (float32 "
      "(B, N_q, T_q), each query row's natural-log log-sum-exp of its softmax's logits), on any "
      "stream, the primitive's own kernels (never the GPU's composite).");
  m.def(
      "_set_attention_lse",
      [](const std::string& mode) {
        using fast::detail::AttentionLse;
        auto previous = fast::detail::attention_lse();
        if (mode == "gpu") {
          fast::detail::set_attention_lse(AttentionLse::gpu);
        } else if (mode == "always") {
          fast::detail::set_attention_lse(AttentionLse::always);
        } else if (mode == "never") {
          fast::detail::set_attention_lse(AttentionLse::never);
        } else {
          throw std::invalid_argument(msg(
              "[_set_attention_lse] mode must be 'gpu', 'always' or 'never'; got '", mode, "'."));
        }
        return previous == AttentionLse::gpu      ? "gpu"
               : previous == AttentionLse::always ? "always"
                                                  : "never";
      },
      nb::arg("mode"),
      "Testing: where scaled_dot_product_attention's fused primitive, built while a transform "
      "traces, also outputs each row's log-sum-exp for its backward: 'gpu' (the default: on GPU "
      "streams), 'always' (CPU streams too) or 'never'. Returns the previous mode.");
  m.def(
      "cross_entropy",
      [](const array& logits, const array& targets, StreamOrDevice s) {
        return fast::cross_entropy(logits, targets, s);
      },
      nb::arg("logits"), nb::arg("targets"), nb::kw_only(), nb::arg("stream") = nb::none(),
      "cross_entropy(logits, targets, *, stream=None)\n\nCross entropy with class indices: "
      "``logsumexp(logits, axis=-1) - logits[..., targets]``, computed in float32 (float64 for "
      "float64 logits) in one fused pass per row; the backward is one more fused pass. A "
      "target outside ``[0, C)`` gives NaN for its row (loss and gradient) instead of an "
      "error, so no device sync is needed.\n\nArgs:\n"
      "    logits (array): Unnormalized scores; classes along the last axis.\n    targets "
      "(array): Integer class indices shaped like ``logits`` without its last axis.\n\n"
      "Returns:\n    array: The float32 loss of each element, shaped like ``targets``. Its "
      "gradient with respect to ``logits`` is ``softmax(logits) - one_hot(targets)``.");
  m.def(
      "_adam_update",
      [](const array& p, const array& g, const array& m, const array& v, const array& lr,
         const array& c1, const array& c2, double beta1, double beta2, double eps,
         double weight_decay, StreamOrDevice s) {
        auto out = fast::adam_update(p, g, m, v, lr, c1, c2, beta1, beta2, eps, weight_decay, s);
        return nb::make_tuple(out[0], out[1], out[2]);
      },
      nb::arg("p"), nb::arg("g"), nb::arg("m"), nb::arg("v"), nb::arg("lr"), nb::arg("c1"),
      nb::arg("c2"), nb::kw_only(), nb::arg("beta1"), nb::arg("beta2"), nb::arg("eps"),
      nb::arg("weight_decay") = 0.0, nb::arg("stream") = nb::none(),
      "_adam_update(p, g, m, v, lr, c1, c2, *, beta1, beta2, eps, weight_decay=0.0, "
      "stream=None)\n\nOne fused Adam (AdamW) step of a parameter, what mlx.optimizers.Adam "
      "runs: ``m' = b1 m + (1 - b1) g``, ``v' = b2 v + (1 - b2) g^2``, ``p' = p (1 - lr wd) - "
      "lr (m' / c1) / (sqrt(v' / c2) + eps)`` with the bias corrections ``c1, c2`` (1 for "
      "none). Returns ``(p', m', v')``.");
  m.def(
      "_adam_update_many",
      [](const std::vector<array>& p, const std::vector<array>& g, const std::vector<array>& m,
         const std::vector<array>& v, const array& lr, const array& c1, const array& c2,
         double beta1, double beta2, double eps, double weight_decay, StreamOrDevice s) {
        return fused_by_dtype("[adam_update]", p, {&g, &m, &v}, 3, [&](const auto& in) {
          return fast::adam_update(in[0], in[1], in[2], in[3], lr, c1, c2, beta1, beta2, eps,
                                   weight_decay, s);
        });
      },
      nb::arg("p"), nb::arg("g"), nb::arg("m"), nb::arg("v"), nb::arg("lr"), nb::arg("c1"),
      nb::arg("c2"), nb::kw_only(), nb::arg("beta1"), nb::arg("beta2"), nb::arg("eps"),
      nb::arg("weight_decay") = 0.0, nb::arg("stream") = nb::none(),
      "_adam_update_many(p, g, m, v, lr, c1, c2, *, beta1, beta2, eps, weight_decay=0.0, "
      "stream=None)\n\n``_adam_update`` for lists of parameters (any shapes and floating "
      "dtypes) with their gradients and moments: what mlx.optimizers.Adam and AdamW run for a "
      "model's update, one fused step per dtype. Returns ``(ps', ms', vs')``, three lists, with "
      "None where the fused step does not apply (a parameter that is not floating point, or a "
      "gradient or moment of another shape or dtype): the caller updates those with ops.");
  m.def(
      "_sgd_update_many",
      [](const std::vector<array>& p, const std::vector<array>& g, const std::vector<array>& v,
         const array& lr, double momentum, double dampening, double weight_decay, bool nesterov,
         StreamOrDevice s) {
        auto step = [&](const auto& in) {
          return fast::sgd_update(in[0], in[1], in.size() > 2 ? in[2] : std::vector<array>{}, lr,
                                  momentum, dampening, weight_decay, nesterov, s);
        };
        if (momentum > 0) {
          return fused_by_dtype("[sgd_update]", p, {&g, &v}, 2, step);
        }
        return fused_by_dtype("[sgd_update]", p, {&g}, 1, step);
      },
      nb::arg("p"), nb::arg("g"), nb::arg("v"), nb::arg("lr"), nb::kw_only(),
      nb::arg("momentum") = 0.0, nb::arg("dampening") = 0.0, nb::arg("weight_decay") = 0.0,
      nb::arg("nesterov") = false, nb::arg("stream") = nb::none(),
      "_sgd_update_many(p, g, v, lr, *, momentum=0.0, dampening=0.0, weight_decay=0.0, "
      "nesterov=False, stream=None)\n\nOne fused SGD step (mlx.optimizers.SGD's formulas) for "
      "lists of parameters with their gradients and velocities (``v`` is not read without "
      "momentum), one fused step per dtype. Returns ``(ps', vs')``: lists with None where the "
      "fused step does not apply (the caller's ops update those), ``vs'`` all None without "
      "momentum.");
  m.def(
      "gated_delta_update",
      [](const array& q, const array& k, const array& v, const array& gamma, const array& beta,
         std::optional<array> initial_state, std::optional<array> mask, StreamOrDevice s) {
        return fast::gated_delta_update(q, k, v, gamma, beta, initial_state, mask, s);
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("gamma"), nb::arg("beta"),
      nb::arg("initial_state") = nb::none(), nb::arg("mask") = nb::none(),
      nb::arg("stream") = nb::none(),
      "gated_delta_update(q, k, v, gamma, beta, initial_state=None, mask=None, stream=None)\n\n"
      "The gated delta rule (Gated DeltaNet's recurrence) over a sequence. For each step and "
      "value head, with state ``S`` of shape (Dv, Dk): ``S = gamma * S``, then "
      "``S += beta * (v - S @ k) k^T``, and the output is ``S @ q``.\n\nArgs:\n    q, k "
      "(array): (B, T, Hk, Dk).\n    v (array): (B, T, Hv, Dv); Hv is a multiple of Hk and "
      "value head h reads key head h // (Hv // Hk).\n    gamma (array): Decay factors (linear, "
      "not log), (B, T, Hv) or per key feature (B, T, Hv, Dk).\n    beta (array): Update "
      "rates, (B, T, Hv).\n    initial_state (array, optional): (B, Hv, Dv, Dk); zeros by "
      "default.\n    mask (array, optional): (B, T) booleans; false steps keep the state and "
      "output zeros.\n\nReturns:\n    list[array]: The outputs (B, T, Hv, Dv) in q's dtype and "
      "the final state (B, Hv, Dv, Dk) in float32.");
  // Kernels built from source: creating one succeeds (programs build them at import time),
  // calling it needs the backend that compiles the source.
  nb::class_<UnavailableKernel>(m, "_UnavailableKernel")
      .def("__call__",
           [](const UnavailableKernel& k, nb::args, nb::kwargs) -> nb::object {
             throw std::runtime_error(k.message);
           })
      .def("__repr__", [](const UnavailableKernel& k) { return "<kernel '" + k.name + "'>"; });
  m.def(
      "metal_kernel",
      [](const std::string& name, const std::vector<std::string>& input_names,
         const std::vector<std::string>& output_names, const std::string& source,
         const std::string& header, bool ensure_row_contiguous, bool atomic_outputs,
         nb::object compile_options) {
        return UnavailableKernel{name,
                                 "[metal_kernel] Metal is not available: the custom Metal "
                                 "kernel '" +
                                     name +
                                     "' needs an Apple GPU (on NVIDIA GPUs use "
                                     "mx.fast.cuda_kernel)."};
      },
      nb::arg("name"), nb::arg("input_names"), nb::arg("output_names"), nb::arg("source"),
      nb::arg("header") = "", nb::arg("ensure_row_contiguous") = true,
      nb::arg("atomic_outputs") = false, nb::arg("compile_options") = nb::none(),
      "metal_kernel(name, input_names, output_names, source, header='', "
      "ensure_row_contiguous=True, atomic_outputs=False, compile_options=None)\n\nA custom "
      "Metal kernel. Metal is not available on Linux: the kernel object is created (so modules "
      "that define kernels at import time load), but calling it raises RuntimeError.");
  init_custom_kernels(m);
}
