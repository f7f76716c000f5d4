// Quantization: quantize, dequantize, quantized_matmul, gather_qmm, qqmm and gather_qqmm
// (MLX's modes and packed layouts).
#include "mlx/ops/quantized.h"
#include "mlx/utils.h"
#include "python/src/bindings.h"
#include "python/src/docstrings.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace mlx::core;
using mlx::core::python::docstring;

void init_quantized(nb::module_& m) {
  m.def(
      "quantize",
      [](const array& w, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, const std::optional<array>& global_scale, StreamOrDevice s) {
        return mlx::core::python::to_tuple(quantize(w, group_size, bits, mode, global_scale, s));
      },
      "w"_a, "group_size"_a = nb::none(), "bits"_a = nb::none(), "mode"_a = "affine", nb::kw_only(),
      "global_scale"_a = nb::none(), "stream"_a = nb::none(), docstring("quantize"));
  m.def(
      "dequantize",
      [](const array& w, const array& scales, const std::optional<array>& biases,
         std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
         const std::optional<array>& global_scale, std::optional<Dtype> dtype, StreamOrDevice s) {
        return dequantize(w, scales, biases, group_size, bits, mode, dtype, global_scale, s);
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
  m.def(
      "gather_qmm",
      [](const array& x, const array& w, const array& scales, const std::optional<array>& biases,
         const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices,
         bool transpose, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, const std::optional<array>& global_scale, bool sorted_indices,
         StreamOrDevice s) {
        return gather_qmm(x, w, scales, biases, lhs_indices, rhs_indices, transpose, group_size,
                          bits, mode, global_scale, sorted_indices, s);
      },
      "x"_a, "w"_a, "scales"_a, "biases"_a = nb::none(), "lhs_indices"_a = nb::none(),
      "rhs_indices"_a = nb::none(), "transpose"_a = true, "group_size"_a = nb::none(),
      "bits"_a = nb::none(), "mode"_a = "affine", "global_scale"_a = nb::none(), nb::kw_only(),
      "sorted_indices"_a = false, "stream"_a = nb::none(), docstring("gather_qmm"));
  m.def(
      "qqmm",
      [](const array& x, const array& w, const std::optional<array>& scales,
         std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
         const std::optional<array>& global_scale_x, const std::optional<array>& global_scale_w,
         StreamOrDevice s) {
        return qqmm(x, w, scales, group_size, bits, mode, global_scale_x, global_scale_w, s);
      },
      "x"_a, "w"_a, "scales"_a = nb::none(), "group_size"_a = nb::none(), "bits"_a = nb::none(),
      "mode"_a = "nvfp4", "global_scale_x"_a = nb::none(), "global_scale_w"_a = nb::none(),
      nb::kw_only(), "stream"_a = nb::none(), docstring("qqmm"));
  m.def(
      "gather_qqmm",
      [](const array& x, const array& w, const std::optional<array>& scales,
         const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices,
         std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
         const std::optional<array>& global_scale_x, const std::optional<array>& global_scale_w,
         bool sorted_indices, StreamOrDevice s) {
        return gather_qqmm(x, w, scales, lhs_indices, rhs_indices, group_size, bits, mode,
                           global_scale_x, global_scale_w, sorted_indices, s);
      },
      "x"_a, "w"_a, "scales"_a = nb::none(), "lhs_indices"_a = nb::none(),
      "rhs_indices"_a = nb::none(), "group_size"_a = nb::none(), "bits"_a = nb::none(),
      "mode"_a = "nvfp4", "global_scale_x"_a = nb::none(), "global_scale_w"_a = nb::none(),
      nb::kw_only(), "sorted_indices"_a = false, "stream"_a = nb::none(), docstring("gather_qqmm"));
}
