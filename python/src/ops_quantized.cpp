// Quantization: quantize, dequantize, quantized_matmul (affine mode, MLX's packed layout).
#include "mlx/ops/quantized.h"
#include "mlx/utils.h"
#include "python/src/bindings.h"
#include "python/src/docstrings.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace mlx::core;
using mlx::core::python::docstring;

namespace {

void check_no_global_scale(const std::optional<array>& global_scale, const char* op) {
  if (global_scale) {
    throw std::invalid_argument(
        msg("[", op, "] global_scale applies to the 'nvfp4' mode only, which is not supported."));
  }
}

}  // namespace

void init_quantized(nb::module_& m) {
  m.def(
      "quantize",
      [](const array& w, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, const std::optional<array>& global_scale, StreamOrDevice s) {
        check_no_global_scale(global_scale, "quantize");
        return mlx::core::python::to_tuple(quantize(w, group_size, bits, mode, s));
      },
      "w"_a, "group_size"_a = nb::none(), "bits"_a = nb::none(), "mode"_a = "affine", nb::kw_only(),
      "global_scale"_a = nb::none(), "stream"_a = nb::none(), docstring("quantize"));
  m.def(
      "dequantize",
      [](const array& w, const array& scales, const std::optional<array>& biases,
         std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
         const std::optional<array>& global_scale, std::optional<Dtype> dtype, StreamOrDevice s) {
        check_no_global_scale(global_scale, "dequantize");
        return dequantize(w, scales, biases, group_size, bits, mode, dtype, s);
      },
      "w"_a, "scales"_a, "biases"_a = nb::none(), "group_size"_a = nb::none(),
      "bits"_a = nb::none(), "mode"_a = "affine", "global_scale"_a = nb::none(),
      "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(), docstring("dequantize"));
  m.def(
      "quantized_matmul",
      [](const array& x, const array& w, const array& scales, const std::optional<array>& biases,
         bool transpose, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, StreamOrDevice s) {
        return quantized_matmul(x, w, scales, biases, transpose, group_size, bits, mode, s);
      },
      "x"_a, "w"_a, "scales"_a, "biases"_a = nb::none(), "transpose"_a = true,
      "group_size"_a = nb::none(), "bits"_a = nb::none(), "mode"_a = "affine", nb::kw_only(),
      "stream"_a = nb::none(), docstring("quantized_matmul"));
}
