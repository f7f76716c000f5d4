// Quantization with MLX's layouts, so that weights quantized by MLX load and compute the same.
// Codes are packed little-endian into uint32 words along the last axis (value i of a row
// occupies bits [i bits, (i + 1) bits) of the row's bit stream). Modes (group size, bits):
// - affine (32, 64 default, 128; 1, 2, 3, 4 default, 5, 6, 8): per group a scale s and a bias
//   b in the input's dtype, codes q = round((w - b) / s) clamped to [0, 2^bits - 1]. As MLX
//   does: b is the edge (min or max) of larger magnitude and s (negative when b is the max)
//   is adjusted so that b / s is a whole number, which makes zero exactly representable;
// - mxfp4 (32; 4) and mxfp8 (32; 8): E2M1 / E4M3 elements with a uint8 E8M0 scale per group,
//   the smallest power of two with amax / scale <= the element format's largest value;
// - nvfp4 (16; 4): E2M1 elements with a uint8 E4M3 scale amax / 6 per group (times
//   2688 / global_scale when a float32 global scale is given).
// E2M1 rounds to the nearest value with ties toward zero, E4M3 to nearest even.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// {w_q, scales, biases} (affine) or {w_q, scales} for w of rank >= 2 whose last dimension is
// divisible by the group size.
std::vector<array> quantize(const array& w, std::optional<int> group_size = std::nullopt,
                            std::optional<int> bits = std::nullopt,
                            const std::string& mode = "affine",
                            const std::optional<array>& global_scale = std::nullopt,
                            StreamOrDevice s = {});

// The dequantized matrix in `dtype` (default: the scales' dtype for affine, else bfloat16).
array dequantize(const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 std::optional<Dtype> dtype = std::nullopt,
                 const std::optional<array>& global_scale = std::nullopt, StreamOrDevice s = {});

// x @ W.T (transpose, W of shape (N, K) quantized along K) or x @ W (W (K, N) quantized along
// N) for the quantized W.
array quantized_matmul(const array& x, const array& w, const array& scales,
                       const std::optional<array>& biases, bool transpose = true,
                       std::optional<int> group_size = std::nullopt,
                       std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                       StreamOrDevice s = {});

// quantized_matmul with matrix-level gather (as gather_mm): out[i] = x_flat[lhs[i]] @ W[rhs[i]]
// over the batch dimensions of x and of the quantized w (scales and biases batched like w).
array gather_qmm(const array& x, const array& w, const array& scales,
                 const std::optional<array>& biases,
                 const std::optional<array>& lhs_indices = std::nullopt,
                 const std::optional<array>& rhs_indices = std::nullopt, bool transpose = true,
                 std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 const std::optional<array>& global_scale = std::nullopt,
                 bool sorted_indices = false, StreamOrDevice s = {});

// x @ w.T with x quantized on the fly and w quantized on the fly (float w, trainable: the
// gradients pass straight through the quantization) or already quantized (uint32 w with
// scales). Modes nvfp4 (default), mxfp8 and mxfp4. The product of the dequantized operands
// is computed in float32.
array qqmm(const array& x, const array& w, const std::optional<array>& scales = std::nullopt,
           std::optional<int> group_size = std::nullopt, std::optional<int> bits = std::nullopt,
           const std::string& mode = "nvfp4",
           const std::optional<array>& global_scale_x = std::nullopt,
           const std::optional<array>& global_scale_w = std::nullopt, StreamOrDevice s = {});

// qqmm with matrix-level gather (as gather_mm).
array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales = std::nullopt,
                  const std::optional<array>& lhs_indices = std::nullopt,
                  const std::optional<array>& rhs_indices = std::nullopt,
                  std::optional<int> group_size = std::nullopt,
                  std::optional<int> bits = std::nullopt, const std::string& mode = "nvfp4",
                  const std::optional<array>& global_scale_x = std::nullopt,
                  const std::optional<array>& global_scale_w = std::nullopt,
                  bool sorted_indices = false, StreamOrDevice s = {});

}  // namespace mlx::core
