// Custom CUDA kernels from Python or C++ (mlx::core::fast), with MLX's interface: a kernel body
// whose signature is generated from its inputs and outputs, or a PTX / cubin image. They run on
// GPU streams only.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "mlx/array.h"
#include "mlx/primitives/custom_kernel.h"
#include "mlx/runtime/stream.h"

namespace mlx::core::fast {

// A template argument: a dtype (a type parameter), an int or a bool.
using KernelTemplateArg = std::variant<Dtype, int, bool>;

// mx.fast.cuda_kernel: `source` is the kernel's body. Input `a` of dtype T is `const T* a`;
// `a_shape` (int32), `a_strides` (int64, in elements) and `a_ndim` (int) are passed too when the
// body names them; output `o` is `T* o`. Threads outside `grid` (counted in threads, as
// metal_kernel's) return before the body runs. `header` comes before the kernel.
class CudaKernel {
 public:
  CudaKernel(std::string name, std::vector<std::string> input_names,
             std::vector<std::string> output_names, std::string source, std::string header,
             bool ensure_row_contiguous, int shared_memory);

  std::vector<array> operator()(
      const std::vector<array>& inputs, const std::vector<Shape>& output_shapes,
      const std::vector<Dtype>& output_dtypes, std::array<int, 3> grid,
      std::array<int, 3> threadgroup,
      const std::vector<std::pair<std::string, KernelTemplateArg>>& template_args = {},
      std::optional<float> init_value = std::nullopt, bool verbose = false,
      StreamOrDevice s = {}) const;

  const std::string& name() const { return name_; }
  // The CUDA source a call with these inputs and template arguments compiles.
  std::string source_for(
      const std::vector<array>& inputs, const std::vector<Dtype>& output_dtypes,
      const std::vector<std::pair<std::string, KernelTemplateArg>>& template_args) const;

 private:
  std::string name_;
  std::vector<std::string> input_names_, output_names_;
  std::string source_, header_;
  bool ensure_row_contiguous_;
  int shared_memory_;
  std::vector<uint8_t> input_extras_;  // per input: the InputExtras its source names
};

// mx.fast.precompiled_cuda_kernel: runs the kernel `name` of a PTX or cubin image. Its
// parameters are the inputs' pointers, the outputs' pointers, then `scalars` by value (bool,
// int64, double).
std::vector<array> precompiled_cuda_kernel(
    const std::string& name, const std::string& compiled_source, const std::vector<array>& inputs,
    const std::vector<Shape>& output_shapes, const std::vector<Dtype>& output_dtypes,
    const std::vector<KernelScalar>& scalars, std::array<int, 3> grid,
    std::array<int, 3> threadgroup, int shared_memory = 0,
    std::optional<float> init_value = std::nullopt, bool ensure_row_contiguous = false,
    StreamOrDevice s = {});

}  // namespace mlx::core::fast
