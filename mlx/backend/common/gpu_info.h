// What the GPU backend (CUDA, or none) reports about its devices.
#pragma once

namespace mlx::core::gpu {

bool is_available();
int device_count();

}  // namespace mlx::core::gpu
