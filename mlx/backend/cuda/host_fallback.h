// Running a primitive's CPU kernel on a GPU stream: for primitives without a GPU kernel
// (missing_kernels.cpp) and for the cases a GPU kernel does not take.
#pragma once

#include <vector>

#include "mlx/array.h"

namespace mlx::core::cu {

// Brings every input to the host on this (the GPU stream's) thread, ordered after the GPU work
// that made it, so the CPU kernel's own threads find host copies and issue no transfers.
inline void inputs_to_host(const std::vector<array>& inputs) {
  for (const auto& in : inputs) {
    in.data<char>();
  }
}

}  // namespace mlx::core::cu
