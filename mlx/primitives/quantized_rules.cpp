// Transform rules of the quantized products: linear in x (the product with the transposed
// quantized matrix); the quantized matrix, its scales and biases carry no derivative.
// GatherQMM's cotangent for x is a gather_qmm with the transposed matrix, summed back into
// x's matrices by lhs index.
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/primitives/quantized.h"
#include "mlx/transforms/rule_utils.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

void check_x_only(const std::vector<int>& argnums, const char* name, size_t first_index) {
  for (int a : argnums) {
    if (a != 0 && static_cast<size_t>(a) < first_index) {
      throw std::invalid_argument(
          msg("[", name,
              "] Derivatives with respect to the quantized matrix, its scales or "
              "its biases are not supported."));
    }
  }
}

// biases (affine) and the global scale (nvfp4) among the inputs after the scales.
struct ScaleArgs {
  std::optional<array> biases, global_scale;
};
ScaleArgs scale_args(const std::vector<array>& in, QuantMode mode, size_t end) {
  ScaleArgs a;
  if (end > 3) {
    (mode == QuantMode::affine ? a.biases : a.global_scale) = in[3];
  }
  return a;
}

}  // namespace

std::vector<array> QuantizedMatmul::jvp(const std::vector<array>& primals,
                                        const std::vector<array>& tangents,
                                        const std::vector<int>& argnums) {
  check_x_only(argnums, name(), primals.size());
  auto a = scale_args(primals, mode_, primals.size());
  return {quantized_matmul(tangents[0], primals[1], primals[2], a.biases, transpose_, group_size_,
                           bits_, quant_mode_name(mode_), stream())};
}

std::vector<array> QuantizedMatmul::vjp(const std::vector<array>& primals,
                                        const std::vector<array>& cotangents,
                                        const std::vector<int>& argnums,
                                        const std::vector<array>&) {
  check_x_only(argnums, name(), primals.size());
  auto a = scale_args(primals, mode_, primals.size());
  return {quantized_matmul(cotangents[0], primals[1], primals[2], a.biases, !transpose_,
                           group_size_, bits_, quant_mode_name(mode_), stream())};
}

std::pair<std::vector<array>, std::vector<int>> QuantizedMatmul::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  for (size_t i = 1; i < axes.size(); ++i) {
    if (axes[i] >= 0) {
      throw std::invalid_argument(
          "[QuantizedMatmul] vmap over the quantized matrix, its scales or its biases is not "
          "supported.");
    }
  }
  array x = detail::batch_first(inputs[0], axes[0]);
  auto a = scale_args(inputs, mode_, inputs.size());
  return {{quantized_matmul(x, inputs[1], inputs[2], a.biases, transpose_, group_size_, bits_,
                            quant_mode_name(mode_), stream())},
          {0}};
}

// GatherQMM: inputs {x (X, M, K), w, scales, [biases | global scale], lhs (S), rhs (S)}.

std::vector<array> GatherQMM::jvp(const std::vector<array>& primals,
                                  const std::vector<array>& tangents,
                                  const std::vector<int>& argnums) {
  const size_t n = primals.size();
  check_x_only(argnums, name(), n - 2);
  auto a = scale_args(primals, mode_, n - 2);
  return {gather_qmm(tangents[0], primals[1], primals[2], a.biases, primals[n - 2], primals[n - 1],
                     transpose_, group_size_, bits_, quant_mode_name(mode_), a.global_scale,
                     sorted_, stream())};
}

std::vector<array> GatherQMM::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents,
                                  const std::vector<int>& argnums, const std::vector<array>&) {
  StreamOrDevice s = stream();
  const size_t np = primals.size();
  check_x_only(argnums, name(), np - 2);
  auto a = scale_args(primals, mode_, np - 2);
  const array& x = primals[0];
  int M = x.shape(1), K = x.shape(2);
  int n = static_cast<int>(primals[np - 2].size());
  array g = reshape(cotangents[0], {n, M, cotangents[0].shape(-1)}, s);
  array lhs = flatten(primals[np - 2], s);
  array rhs = flatten(primals[np - 1], s);
  std::vector<array> out;
  for (int arg : argnums) {
    if (arg != 0) {
      out.push_back(zeros_like(primals[arg], s));
      continue;
    }
    array per_item =
        gather_qmm(g, primals[1], primals[2], a.biases, std::nullopt, rhs, !transpose_, group_size_,
                   bits_, quant_mode_name(mode_), a.global_scale, false, s);  // (n, M, K)
    out.push_back(scatter_add(zeros_like(x, s), lhs, reshape(per_item, {n, 1, M, K}, s), 0, s));
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> GatherQMM::vmap(const std::vector<array>&,
                                                                const std::vector<int>&) {
  throw std::invalid_argument("[GatherQMM] vmap is not supported.");
}

}  // namespace mlx::core
