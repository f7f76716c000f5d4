// MLX_ENABLE_TF32: float32 matrix products (cuBLASLt) and convolutions (cuDNN) may round their
// operands to TF32 on tensor cores; off by default, so float32 stays float32.
#pragma once

#include <cstdlib>

namespace mlx::core::cu {

inline bool tf32_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("MLX_ENABLE_TF32");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

}  // namespace mlx::core::cu
