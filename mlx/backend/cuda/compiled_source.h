// The CUDA kernel of a fused region (Compiled::eval_gpu, compiled.cu) as source, and its build by
// NVRTC: host code that needs no GPU, so tools and tests generate and build kernels anywhere.
#pragma once

#include <optional>
#include <string>

#include "mlx/primitives/compiled.h"

namespace mlx::core::cu {

constexpr int kFusedMaxDims = 8;

// How a kernel reads each input: one char per input in the `access` strings below.
enum class Access : char { dense = 'd', scalar = 's', strided = 'g' };

// The kernel `name` of region `c` whose inputs are read as `access` says, for sm_`arch`: a
// grid-stride loop over the region's elements, or a block per row with a reduction epilogue.
std::string fused_kernel_source(const Compiled& c, const std::string& access,
                                const std::string& name, int arch);

// What every fused kernel's source starts with (its includes; JitCache's Toolchain::prelude).
const std::string& fused_kernel_prelude();

// Builds a whole source (prelude included) for sm_`arch` into the cubin file `out`; nullopt, or
// why it failed (NVRTC's log).
std::optional<std::string> build_fused_kernel(const std::string& source, const std::string& out,
                                              int arch);

}  // namespace mlx::core::cu
