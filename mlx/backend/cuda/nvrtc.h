// NVRTC, in process, for the kernels compiled at run time: mx.fast.cuda_kernel's sources
// (custom_kernel.cpp) and fused regions (compiled.cu). Needs no GPU: the target is a parameter.
#pragma once

#include <string>
#include <vector>

namespace mlx::core::cu {

struct NvrtcResult {
  std::string cubin;                 // empty when the compile failed
  std::vector<std::string> lowered;  // the lowered (mangled) name of each name expression
  std::string error;                 // why it failed: NVRTC's log or the failing call
};

// Compiles `source` (named `file` in messages) into a cubin for sm_`arch`. The project's device
// headers ("mlx/backend/cuda/elementwise_ops.cuh" and what it includes) come from the library
// (embedded at build time), the toolkit's (cuda_fp16.h, cuda/std/...) from the toolkit found at
// run time (nvrtc_toolkit_include()). `options` follow the target and include options.
NvrtcResult nvrtc_compile(const std::string& source, const std::string& file, int arch,
                          const std::vector<std::string>& options,
                          const std::vector<std::string>& name_expressions = {});

// The NVRTC library the compiles use, opened on first call (lazy_libraries.cpp), or "" when it
// does not load.
std::string nvrtc_library_file();

// The toolkit's include directory whose headers the compiles use (with libcu++), or "" when none
// was found or NVRTC does not load: the one beside libnvrtc first (its own version), then
// $CUDA_HOME, $CUDA_PATH, the build's toolkit and /usr/local/cuda.
const std::string& nvrtc_toolkit_include();

// Identifies what a cubin depends on besides its source and options: NVRTC's version and the
// embedded headers (a hash). Empty when this build has no NVRTC.
const std::string& nvrtc_fingerprint();

struct EmbeddedHeader {
  const char* name;  // as included: "mlx/backend/cuda/device_types.cuh"
  const char* text;
};
// The project headers generated source may include (embedded_headers.cpp, made by CMake).
const std::vector<EmbeddedHeader>& embedded_headers();

}  // namespace mlx::core::cu
