// The op side of custom CUDA kernels: argument checks, the generated source, and the
// CustomKernel node (compiled and launched by backend/cuda/custom_kernel.cpp).
#include "mlx/fast_custom_kernel.h"

#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "mlx/backend/common/cuda_type_names.h"
#include "mlx/ops/creation.h"
#include "mlx/ops/shape.h"
#include "mlx/runtime/device.h"
#include "mlx/utils.h"

namespace mlx::core::fast {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) {
    return false;
  }
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
      return false;
    }
  }
  return true;
}

void check_names(const char* op, const std::string& name, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs) {
  if (!is_identifier(name)) {
    throw std::invalid_argument(
        msg("[", op, "] The kernel name must be a C identifier; got '", name, "'."));
  }
  std::set<std::string> seen;
  for (const auto& list : {inputs, outputs}) {
    for (const auto& n : list) {
      if (!is_identifier(n)) {
        throw std::invalid_argument(
            msg("[", op, "] Parameter names must be C identifiers; got '", n, "'."));
      }
      if (!seen.insert(n).second) {
        throw std::invalid_argument(msg("[", op, "] The parameter name '", n, "' is repeated."));
      }
    }
  }
}

// The GPU stream the kernel runs on; a CPU stream is refused (there is no host kernel).
Stream gpu_stream(const char* op, StreamOrDevice s) {
  Stream stream = to_stream(s);
  if (stream.device.type != Device::gpu) {
    throw std::invalid_argument(
        msg("[", op, "] Custom CUDA kernels run on the GPU, not on ", stream.device,
            is_available(Device(Device::gpu)) ? " (pass stream=mx.gpu)."
                                              : " (this machine has no usable GPU)."));
  }
  return stream;
}

void check_launch(const char* op, const std::array<int, 3>& grid,
                  const std::array<int, 3>& threadgroup, int shared_memory) {
  int64_t threads = 1;
  for (int d = 0; d < 3; ++d) {
    if (grid[d] <= 0 || threadgroup[d] <= 0) {
      throw std::invalid_argument(
          msg("[", op, "] grid and threadgroup must be positive; got grid (", grid[0], ", ",
              grid[1], ", ", grid[2], ") and threadgroup (", threadgroup[0], ", ", threadgroup[1],
              ", ", threadgroup[2], ")."));
    }
    threads *= threadgroup[d];
  }
  if (threads > 1024) {
    throw std::invalid_argument(
        msg("[", op, "] A threadgroup has at most 1024 threads; got ", threads, "."));
  }
  if (shared_memory < 0) {
    throw std::invalid_argument(
        msg("[", op, "] shared_memory must be non-negative; got ", shared_memory, "."));
  }
}

void check_outputs(const char* op, size_t expected, const std::vector<Shape>& shapes,
                   const std::vector<Dtype>& dtypes) {
  if (shapes.size() != expected || dtypes.size() != expected) {
    throw std::invalid_argument(msg("[", op, "] Expected ", expected,
                                    " output shapes and dtypes; got ", shapes.size(), " and ",
                                    dtypes.size(), "."));
  }
  for (const auto& s : shapes) {
    for (auto d : s) {
      if (d < 0) {
        throw std::invalid_argument(msg("[", op, "] Negative output dimension in ", s, "."));
      }
    }
  }
}

// The node: the inputs, then one broadcast fill per output when init_value is given.
std::vector<array> make_node(Stream stream, CustomKernelSpec spec, std::vector<array> inputs,
                             const std::vector<Shape>& shapes, const std::vector<Dtype>& dtypes,
                             std::optional<float> init_value) {
  if (init_value) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      inputs.push_back(broadcast_to(array(*init_value, dtypes[i]), shapes[i], stream));
    }
    spec.initialized = static_cast<int>(shapes.size());
  }
  auto p = std::make_shared<CustomKernel>(stream, std::move(spec));
  return array::make_arrays(shapes, dtypes, p, inputs);
}

}  // namespace

CudaKernel::CudaKernel(std::string name, std::vector<std::string> input_names,
                       std::vector<std::string> output_names, std::string source,
                       std::string header, bool ensure_row_contiguous, int shared_memory)
    : name_(std::move(name)),
      input_names_(std::move(input_names)),
      output_names_(std::move(output_names)),
      source_(std::move(source)),
      header_(std::move(header)),
      ensure_row_contiguous_(ensure_row_contiguous),
      shared_memory_(shared_memory) {
  check_names("cuda_kernel", name_, input_names_, output_names_);
  if (output_names_.empty()) {
    throw std::invalid_argument("[cuda_kernel] A kernel needs at least one output.");
  }
  if (shared_memory_ < 0) {
    throw std::invalid_argument(
        msg("[cuda_kernel] shared_memory must be non-negative; got ", shared_memory_, "."));
  }
  for (const std::string& n : input_names_) {
    uint8_t extras = 0;
    extras |= source_.find(n + "_shape") != std::string::npos ? kShape : 0;
    extras |= source_.find(n + "_strides") != std::string::npos ? kStrides : 0;
    extras |= source_.find(n + "_ndim") != std::string::npos ? kNdim : 0;
    input_extras_.push_back(extras);
  }
}

std::string CudaKernel::source_for(
    const std::vector<array>& inputs, const std::vector<Dtype>& output_dtypes,
    const std::vector<std::pair<std::string, KernelTemplateArg>>& template_args) const {
  bool complex = false;
  auto type = [&](Dtype t) {
    complex |= t == complex64;
    return std::string(cuda_type_name(t));
  };
  std::ostringstream params;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& n = input_names_[i];
    params << "const " << type(inputs[i].dtype()) << "* " << n << ", ";
    if (input_extras_[i] & kShape) {
      params << "const mlx_kernel_shape " << n << "_shape, ";
    }
    if (input_extras_[i] & kStrides) {
      params << "const mlx_kernel_strides " << n << "_strides, ";
    }
    if (input_extras_[i] & kNdim) {
      params << "const int " << n << "_ndim, ";
    }
  }
  for (size_t i = 0; i < output_names_.size(); ++i) {
    params << type(output_dtypes[i]) << "* " << output_names_[i] << ", ";
  }
  params << "const uint3 mlx_grid_threads";
  std::ostringstream tparams;
  for (const auto& [n, v] : template_args) {
    tparams << (tparams.tellp() > 0 ? ", " : "");
    if (std::holds_alternative<Dtype>(v)) {
      tparams << "typename " << n;
      type(std::get<Dtype>(v));
    } else {
      tparams << (std::holds_alternative<int>(v) ? "int " : "bool ") << n;
    }
  }
  std::ostringstream s;
  s << "// mx.fast.cuda_kernel '" << name_ << "'\n"
    << "#include <cooperative_groups.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
    << "#include <cuda/std/cstdint>\n"
    << (complex ? "#include <cuda/std/complex>\ntypedef cuda::std::complex<float> complex64_t;\n"
                : "")
    << "typedef __half float16_t;\ntypedef __nv_bfloat16 bfloat16_t;\n"
    << "struct mlx_kernel_shape {\n  int32_t v[" << kMaxKernelDims
    << "];\n  __device__ int32_t operator[](int i) const { return v[i]; }\n};\n"
    << "struct mlx_kernel_strides {\n  int64_t v[" << kMaxKernelDims
    << "];\n  __device__ int64_t operator[](int i) const { return v[i]; }\n};\n"
    << header_ << "\n";
  if (!template_args.empty()) {
    s << "template <" << tparams.str() << ">\n";
  }
  s << "__global__ void custom_kernel_" << name_ << "(" << params.str() << ") {\n"
    << "  if (blockIdx.x * blockDim.x + threadIdx.x >= mlx_grid_threads.x ||\n"
    << "      blockIdx.y * blockDim.y + threadIdx.y >= mlx_grid_threads.y ||\n"
    << "      blockIdx.z * blockDim.z + threadIdx.z >= mlx_grid_threads.z) {\n"
    << "    return;\n  }\n"
    << source_ << "\n}\n";
  return s.str();
}

std::vector<array> CudaKernel::operator()(
    const std::vector<array>& inputs, const std::vector<Shape>& output_shapes,
    const std::vector<Dtype>& output_dtypes, std::array<int, 3> grid,
    std::array<int, 3> threadgroup,
    const std::vector<std::pair<std::string, KernelTemplateArg>>& template_args,
    std::optional<float> init_value, bool verbose, StreamOrDevice s) const {
  if (inputs.size() != input_names_.size()) {
    throw std::invalid_argument(msg("[cuda_kernel] Kernel '", name_, "' takes ",
                                    input_names_.size(), " inputs; got ", inputs.size(), "."));
  }
  check_outputs("cuda_kernel", output_names_.size(), output_shapes, output_dtypes);
  check_launch("cuda_kernel", grid, threadgroup, shared_memory_);
  std::set<std::string> seen;
  for (const auto& [n, v] : template_args) {
    if (!is_identifier(n) || !seen.insert(n).second) {
      throw std::invalid_argument(msg(
          "[cuda_kernel] Template argument names must be distinct C identifiers; got '", n, "'."));
    }
  }
  CustomKernelSpec spec;
  spec.name = name_;
  spec.code = source_for(inputs, output_dtypes, template_args);
  if (verbose) {
    std::cout << spec.code << std::endl;
  }
  spec.entry = "custom_kernel_" + name_;
  if (!template_args.empty()) {
    spec.entry += "<";
    for (size_t i = 0; i < template_args.size(); ++i) {
      const auto& v = template_args[i].second;
      spec.entry += i ? ", " : "";
      if (auto* d = std::get_if<Dtype>(&v)) {
        spec.entry += cuda_type_name(*d);
      } else if (auto* b = std::get_if<bool>(&v)) {
        spec.entry += *b ? "true" : "false";
      } else {
        spec.entry += std::to_string(std::get<int>(v));
      }
    }
    spec.entry += ">";
  }
  spec.grid = grid;
  spec.threadgroup = threadgroup;
  spec.shared_memory = shared_memory_;
  spec.ensure_row_contiguous = ensure_row_contiguous_;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if ((input_extras_[i] & (kShape | kStrides)) && inputs[i].ndim() > kMaxKernelDims) {
      throw std::invalid_argument(msg("[cuda_kernel] Input '", input_names_[i], "' has ",
                                      inputs[i].ndim(),
                                      " dimensions; kernels that read its shape or strides take "
                                      "at most ",
                                      kMaxKernelDims, "."));
    }
  }
  spec.input_extras = input_extras_;
  Stream stream = gpu_stream("cuda_kernel", s);
  return make_node(stream, std::move(spec), inputs, output_shapes, output_dtypes, init_value);
}

std::vector<array> precompiled_cuda_kernel(
    const std::string& name, const std::string& compiled_source, const std::vector<array>& inputs,
    const std::vector<Shape>& output_shapes, const std::vector<Dtype>& output_dtypes,
    const std::vector<KernelScalar>& scalars, std::array<int, 3> grid,
    std::array<int, 3> threadgroup, int shared_memory, std::optional<float> init_value,
    bool ensure_row_contiguous, StreamOrDevice s) {
  const char* op = "precompiled_cuda_kernel";
  if (name.empty()) {
    throw std::invalid_argument("[precompiled_cuda_kernel] The kernel name is empty.");
  }
  if (compiled_source.empty()) {
    throw std::invalid_argument("[precompiled_cuda_kernel] compiled_source is empty.");
  }
  if (output_shapes.empty()) {
    throw std::invalid_argument("[precompiled_cuda_kernel] A kernel needs at least one output.");
  }
  check_outputs(op, output_shapes.size(), output_shapes, output_dtypes);
  check_launch(op, grid, threadgroup, shared_memory);
  CustomKernelSpec spec;
  spec.name = name;
  spec.entry = name;
  spec.code = compiled_source;
  spec.precompiled = true;
  spec.grid = grid;
  spec.threadgroup = threadgroup;
  spec.shared_memory = shared_memory;
  spec.ensure_row_contiguous = ensure_row_contiguous;
  spec.input_extras.assign(inputs.size(), 0);
  spec.scalars = scalars;
  Stream stream = gpu_stream(op, s);
  return make_node(stream, std::move(spec), inputs, output_shapes, output_dtypes, init_value);
}

}  // namespace mlx::core::fast
