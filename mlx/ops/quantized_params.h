// Checked quantization parameters, shared by the quantization ops (not a public header).
#pragma once

#include <optional>
#include <string>

#include "mlx/array.h"
#include "mlx/primitives/quantized.h"

namespace mlx::core::detail {

struct QuantParams {
  QuantMode mode;
  int group_size;
  int bits;
};

// The mode's defaults filled in and the combination checked (std::invalid_argument naming op).
QuantParams quant_params(std::optional<int> group_size, std::optional<int> bits,
                         const std::string& mode, const char* op);

// Checks a packed matrix w (uint32, rank >= 2) with its scales (and biases for affine) and
// returns the number of quantized columns.
int check_packed(const array& w, const array& scales, const std::optional<array>& biases,
                 const QuantParams& p, const char* op);

// Checks a global scale (a float32 scalar, nvfp4 only).
void check_global_scale(const std::optional<array>& global_scale, const QuantParams& p,
                        const char* op);

}  // namespace mlx::core::detail
