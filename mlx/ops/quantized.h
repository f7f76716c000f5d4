// Affine quantization with MLX's layout: every group_size consecutive values of the last axis
// share a scale s and a bias b (the input's dtype) and are stored as codes
// q = round((w - b) / s) clamped to [0, 2^bits - 1], w ~ s q + b. The codes of a row form a
// little-endian bit stream stored as uint32 (value i occupies bits [i bits, (i + 1) bits)),
// so weights quantized by MLX load and compute the same. group_size 32, 64 (default) or 128;
// bits 2, 3, 4 (default), 5, 6 or 8.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// {w_q, scales, biases} for w of rank >= 2 with its last dimension divisible by group_size.
std::vector<array> quantize(const array& w, std::optional<int> group_size = std::nullopt,
                            std::optional<int> bits = std::nullopt,
                            const std::string& mode = "affine", StreamOrDevice s = {});

// s q + b in `dtype` (default the scales' dtype).
array dequantize(const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});

// x @ W.T (transpose, W of shape (N, K) quantized along K) or x @ W (W (K, N) quantized along
// N) for the quantized W.
array quantized_matmul(const array& x, const array& w, const array& scales,
                       const std::optional<array>& biases, bool transpose = true,
                       std::optional<int> group_size = std::nullopt,
                       std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                       StreamOrDevice s = {});

}  // namespace mlx::core
