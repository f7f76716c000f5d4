// mx.fast: fused normalization, rotary encoding and attention.
#include "mlx/fast.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>

#include "mlx/utils.h"
#include "python/src/bindings.h"

namespace nb = nanobind;
using namespace mlx::core;

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
         std::optional<array> sinks, StreamOrDevice s) {
        std::string mode;
        std::optional<array> mask_arr;
        if (nb::isinstance<nb::str>(mask)) {
          mode = nb::cast<std::string>(mask);
          if (mode != "causal") {
            throw std::invalid_argument(msg("[scaled_dot_product_attention] Invalid mask '", mode,
                                            "'; the only supported string mask is 'causal'."));
          }
        } else if (nb::isinstance<array>(mask)) {
          mode = "array";
          mask_arr = nb::cast<array>(mask);
        } else if (!mask.is_none()) {
          throw nb::type_error(
              "[scaled_dot_product_attention] mask must be None, 'causal' or an "
              "array.");
        }
        return fast::scaled_dot_product_attention(q, k, v, scale, mode, mask_arr, sinks, s);
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::kw_only(), nb::arg("scale"),
      nb::arg("mask").none() = nb::none(), nb::arg("sinks") = nb::none(),
      nb::arg("stream") = nb::none(),
      "softmax(scale * q @ k^T + mask) @ v, with grouped-query heads, 'causal' or array masks and "
      "per-head attention sinks.");
}
