// A user's GPU kernel as a primitive (mx.fast.cuda_kernel, mx.fast.precompiled_cuda_kernel): the
// op layer (fast_custom_kernel.cpp) generates the CUDA source, or carries a PTX / cubin image;
// the CUDA backend compiles (NVRTC), caches and launches it. There is no host kernel and no
// derivative: wrap the call in mx.custom_function to give it one.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "mlx/primitives/primitive.h"

namespace mlx::core::fast {

// A scalar kernel argument of a precompiled kernel, passed by value after the outputs.
using KernelScalar = std::variant<bool, int64_t, double>;

// What the launch passes for one input beside its pointer (the generated signature asks for
// them only when the source names them).
enum InputExtras : uint8_t { kShape = 1, kStrides = 2, kNdim = 4 };
// The most dimensions an input's `_shape` / `_strides` carry (they are passed by value).
constexpr int kMaxKernelDims = 10;

struct CustomKernelSpec {
  std::string name;   // the user's name, for messages
  std::string entry;  // the kernel's symbol, or a name expression NVRTC lowers
  std::string code;   // CUDA source (generated) or the image bytes (precompiled)
  bool precompiled = false;
  std::array<int, 3> grid{1, 1, 1};         // in threads, as metal_kernel's
  std::array<int, 3> threadgroup{1, 1, 1};  // threads per block
  int shared_memory = 0;                    // dynamic shared memory, bytes
  bool ensure_row_contiguous = true;
  std::vector<uint8_t> input_extras;  // one InputExtras mask per kernel input
  std::vector<KernelScalar> scalars;
  // The outputs that start from a value: the last `initialized` inputs are their fills.
  int initialized = 0;
};

class CustomKernel : public Primitive {
 public:
  CustomKernel(Stream stream, CustomKernelSpec spec) : Primitive(stream), spec_(std::move(spec)) {}
  MLX_DECLARE_EVAL
  const char* name() const override { return "CustomKernel"; }
  const CustomKernelSpec& spec() const { return spec_; }

 private:
  CustomKernelSpec spec_;
};

}  // namespace mlx::core::fast
