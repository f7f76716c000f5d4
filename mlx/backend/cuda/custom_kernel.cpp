// CustomKernel::eval_gpu: a user's kernel (mx.fast.cuda_kernel source, compiled here by NVRTC
// for this GPU's architecture, or a precompiled PTX / cubin image), loaded once per distinct
// code and launched on the task's stream with the grid counted in threads.
#include "mlx/primitives/custom_kernel.h"

#include <cuda_runtime.h>

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/nvrtc.h"
#include "mlx/backend/cuda/runtime.h"
#include "mlx/utils.h"

namespace mlx::core::fast {

namespace {

struct KernelShape {
  int32_t v[kMaxKernelDims];
};
struct KernelStrides {
  int64_t v[kMaxKernelDims];
};

const char* op_name(const CustomKernelSpec& spec) {
  return spec.precompiled ? "precompiled_cuda_kernel" : "cuda_kernel";
}

// NVRTC's cubin of `spec.code` for this GPU and the lowered name of its entry.
std::pair<std::string, std::string> compile(const CustomKernelSpec& spec) {
  const cudaDeviceProp& props = cu::device(cu::current().device).props;
  cu::NvrtcResult r = cu::nvrtc_compile(
      spec.code, spec.name + ".cu", props.major * 10 + props.minor, {"-std=c++17"}, {spec.entry});
  if (r.cubin.empty()) {
    throw std::invalid_argument(
        msg("[cuda_kernel] Kernel '", spec.name, "' does not compile:\n", r.error));
  }
  return {std::move(r.cubin), std::move(r.lowered[0])};
}

// The loaded kernel for a spec's code, built and loaded once per device and code.
cudaKernel_t kernel_for(const CustomKernelSpec& spec) {
  static std::mutex mutex;
  static auto* loaded = new std::unordered_map<std::string, cudaKernel_t>();  // never unloaded
  const int device = cu::current().device;
  std::string key =
      std::to_string(device) + (spec.precompiled ? "p" : "s") + spec.entry + '\n' + spec.code;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded->find(key); it != loaded->end()) {
    return it->second;
  }
  std::string image = spec.code, entry = spec.entry;
  if (!spec.precompiled) {
    std::tie(image, entry) = compile(spec);
  } else if (image.find('\0') == std::string::npos) {
    image.push_back('\0');  // PTX text is loaded as a NUL-terminated string
  }
  cudaLibrary_t library = nullptr;
  cudaError_t err =
      cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw std::invalid_argument(msg("[", op_name(spec), "] Loading kernel '", spec.name,
                                    "' failed: ", cudaGetErrorString(err), "."));
  }
  cudaKernel_t kernel = nullptr;
  err = cudaLibraryGetKernel(&kernel, library, entry.c_str());
  if (err != cudaSuccess) {
    cudaGetLastError();
    cudaLibraryUnload(library);
    throw std::invalid_argument(msg("[", op_name(spec), "] The image has no kernel named '", entry,
                                    "': ", cudaGetErrorString(err), "."));
  }
  loaded->emplace(std::move(key), kernel);
  return kernel;
}

// Kernel arguments in their own storage: cudaLaunchKernel takes a pointer to each.
class Arguments {
 public:
  template <typename T>
  void add(const T& v) {
    storage_.emplace_back(sizeof(T));
    std::memcpy(storage_.back().data(), &v, sizeof(T));
  }
  std::vector<void*> pointers() {
    std::vector<void*> p;
    for (auto& s : storage_) {
      p.push_back(s.data());
    }
    return p;
  }

 private:
  std::vector<std::vector<char>> storage_;
};

// A precompiled kernel's scalars, each in the width its parameter has (a Python int may be an
// int or a long long there, a float a float or a double); the parameter count must match.
void add_scalars(const CustomKernelSpec& spec, const void* fn, size_t pointers, Arguments& args) {
  size_t offset = 0, size = 0;
  const size_t want = pointers + spec.scalars.size();
  size_t have = 0;
  while (cudaFuncGetParamInfo(fn, have, &offset, &size) == cudaSuccess) {
    ++have;
  }
  cudaGetLastError();
  if (have != want) {
    throw std::invalid_argument(
        msg("[precompiled_cuda_kernel] Kernel '", spec.name, "' takes ", have, " parameters; got ",
            pointers, " arrays (inputs and outputs) and ", spec.scalars.size(), " scalars."));
  }
  for (size_t k = 0; k < spec.scalars.size(); ++k) {
    MLX_CUDA_CHECK(cudaFuncGetParamInfo(fn, pointers + k, &offset, &size));
    const KernelScalar& v = spec.scalars[k];
    if (auto* b = std::get_if<bool>(&v); b && size == 1) {
      args.add(*b);
    } else if (auto* i = std::get_if<int64_t>(&v); i && (size == 4 || size == 8)) {
      size == 4 ? args.add(static_cast<int32_t>(*i)) : args.add(*i);
    } else if (auto* d = std::get_if<double>(&v); d && (size == 4 || size == 8)) {
      size == 4 ? args.add(static_cast<float>(*d)) : args.add(*d);
    } else {
      throw std::invalid_argument(msg("[precompiled_cuda_kernel] Scalar ", k, " of kernel '",
                                      spec.name, "' does not fit its ", size, "-byte parameter."));
    }
  }
}

}  // namespace

void CustomKernel::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const CustomKernelSpec& spec = spec_;
  const size_t nin = inputs.size() - spec.initialized;
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (spec.initialized) {
      cu::copy_to_contiguous(inputs[nin + j], outputs[j]);  // the fill, broadcast
    } else {
      outputs[j].set_gpu_data(allocator::gpu_malloc(outputs[j].nbytes()));
    }
  }
  std::vector<array> kept;  // contiguous copies live until the launch is issued
  Arguments args;
  for (size_t i = 0; i < nin; ++i) {
    const array& in =
        spec.ensure_row_contiguous ? kept.emplace_back(cu::dense_copy(inputs[i])) : inputs[i];
    args.add(static_cast<const void*>(in.gpu_data<char>()));
    const uint8_t extras = spec.input_extras[i];
    if (extras & kShape) {
      KernelShape shape{};
      for (int d = 0; d < in.ndim(); ++d) {
        shape.v[d] = static_cast<int32_t>(in.shape(d));
      }
      args.add(shape);
    }
    if (extras & kStrides) {
      KernelStrides strides{};
      for (int d = 0; d < in.ndim(); ++d) {
        strides.v[d] = static_cast<int64_t>(in.strides()[d]);
      }
      args.add(strides);
    }
    if (extras & kNdim) {
      args.add(static_cast<int>(in.ndim()));
    }
  }
  for (auto& out : outputs) {
    args.add(static_cast<void*>(out.gpu_data<char>()));
  }
  cudaKernel_t kernel = kernel_for(spec);
  const void* fn = reinterpret_cast<const void*>(kernel);
  if (spec.precompiled) {
    add_scalars(spec, fn, nin + outputs.size(), args);
  } else {
    args.add(dim3(spec.grid[0], spec.grid[1], spec.grid[2]));  // the guard against extra threads
  }
  if (spec.shared_memory > 48 * 1024) {
    MLX_CUDA_CHECK(
        cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, spec.shared_memory));
  }
  dim3 blocks;
  unsigned* b[3] = {&blocks.x, &blocks.y, &blocks.z};
  for (int d = 0; d < 3; ++d) {
    *b[d] = static_cast<unsigned>((int64_t(spec.grid[d]) + spec.threadgroup[d] - 1) /
                                  spec.threadgroup[d]);
  }
  std::vector<void*> pointers = args.pointers();
  cudaError_t err = cudaLaunchKernel(
      fn, blocks, dim3(spec.threadgroup[0], spec.threadgroup[1], spec.threadgroup[2]),
      pointers.data(), static_cast<size_t>(spec.shared_memory), cu::stream());
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw std::invalid_argument(msg("[", op_name(spec), "] Launching kernel '", spec.name,
                                    "' failed: ", cudaGetErrorString(err), "."));
  }
}

}  // namespace mlx::core::fast
