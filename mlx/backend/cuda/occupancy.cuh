// How many blocks of a kernel the GPU holds at once, for launches sized to whole waves.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/runtime.h"

namespace mlx::core::cu {

// Blocks of `Kernel` at `Threads` threads that the whole GPU holds at once (one wave), asked of
// the driver once per kernel.
template <auto Kernel, int Threads>
int64_t resident_blocks() {
  static const int64_t blocks = [] {
    int per_sm = 0;
    MLX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, Threads, 0));
    return int64_t(std::max(per_sm, 1)) * device(0).props.multiProcessorCount;
  }();
  return blocks;
}

}  // namespace mlx::core::cu
