// Generated C++ for fused regions: float32 regions whose ops have eight-lane forms in
// simd/vec.h become one loop that keeps every value in registers, compiled by the system
// compiler into a shared library. Kernels are cached in memory and on disk (keyed on the
// generated source: the ops and which inputs are scalars, never shapes) and built in the
// background while the interpreter runs the region (MLX_COMPILE_JIT=sync builds before the
// first run, =0 turns generation off).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlx/primitives/compiled.h"

namespace mlx::core::cpu {

// Computes n elements: in[k] points at input k's block (its one element when scalar), out[j]
// at output j's block. Every input of a lane group is read before any output is written.
using BlockKernel = void (*)(const void* const* in, void* const* out, int64_t n);

// The source of the region's kernel (function `name`), or nullopt when it has an op or dtype
// without a vector form.
std::optional<std::string> jit_source(const Compiled& c, const std::vector<char>& scalar_inputs,
                                      const std::vector<int>& outputs, const std::string& name);

// The kernel for this region, these scalar inputs and these output values (the region's, and
// the value its reduction reads when that is not one) when it is built; nullptr while it is
// being built, when the region has no vector form, or when generation is off or failed.
BlockKernel jit_kernel(const Compiled& c, const std::vector<char>& scalar_inputs,
                       const std::vector<int>& outputs);

}  // namespace mlx::core::cpu
