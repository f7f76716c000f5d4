#include "mlx/backend/cuda/cudnn_api.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <vector>

#include "mlx/backend/common/dynamic_library.h"
#include "mlx/backend/cuda/runtime.h"
#include "mlx/memory/memory.h"

namespace mlx::core::cu {

namespace {

struct Loaded {
  CudnnApi api;
  void* library = nullptr;
  std::string error;  // empty when api is usable
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    std::vector<std::string> names{"libcudnn.so.9"};
    if (const char* wheel = std::getenv("MLX_CUDNN_WHEEL_LIBNAME"); wheel && *wheel) {
      names.push_back(wheel);
    }
    // Never closed: handles and cached descriptors live until the process exits.
    auto* lib = new DynamicLibrary("MLX_CUDNN_LIBNAME", names, RTLD_NOW | RTLD_LOCAL);
    CudnnApi& a = r.api;
#define MLX_CUDNN_SYM(name) lib->sym(a.name, "cudnn" #name)
    MLX_CUDNN_SYM(GetVersion);
    MLX_CUDNN_SYM(GetErrorString);
    MLX_CUDNN_SYM(Create);
    MLX_CUDNN_SYM(SetStream);
    MLX_CUDNN_SYM(CreateTensorDescriptor);
    MLX_CUDNN_SYM(SetTensorNdDescriptor);
    MLX_CUDNN_SYM(CreateFilterDescriptor);
    MLX_CUDNN_SYM(SetFilterNdDescriptor);
    MLX_CUDNN_SYM(CreateConvolutionDescriptor);
    MLX_CUDNN_SYM(SetConvolutionNdDescriptor);
    MLX_CUDNN_SYM(SetConvolutionGroupCount);
    MLX_CUDNN_SYM(SetConvolutionMathType);
    MLX_CUDNN_SYM(GetConvolutionNdForwardOutputDim);
    MLX_CUDNN_SYM(GetConvolutionForwardAlgorithmMaxCount);
    MLX_CUDNN_SYM(GetConvolutionForwardAlgorithm_v7);
    MLX_CUDNN_SYM(GetConvolutionForwardWorkspaceSize);
    MLX_CUDNN_SYM(FindConvolutionForwardAlgorithmEx);
    MLX_CUDNN_SYM(ConvolutionForward);
    MLX_CUDNN_SYM(GetConvolutionBackwardDataAlgorithmMaxCount);
    MLX_CUDNN_SYM(GetConvolutionBackwardDataAlgorithm_v7);
    MLX_CUDNN_SYM(GetConvolutionBackwardDataWorkspaceSize);
    MLX_CUDNN_SYM(FindConvolutionBackwardDataAlgorithmEx);
    MLX_CUDNN_SYM(ConvolutionBackwardData);
    MLX_CUDNN_SYM(GetConvolutionBackwardFilterAlgorithmMaxCount);
    MLX_CUDNN_SYM(GetConvolutionBackwardFilterAlgorithm_v7);
    MLX_CUDNN_SYM(GetConvolutionBackwardFilterWorkspaceSize);
    MLX_CUDNN_SYM(FindConvolutionBackwardFilterAlgorithmEx);
    MLX_CUDNN_SYM(ConvolutionBackwardFilter);
#undef MLX_CUDNN_SYM
    r.error = lib->error;
    r.library = lib->handle;
    if (r.error.empty() && a.GetVersion() / 10000 != 9) {
      // cuDNN's API is only compatible within a major version (9.x encodes as 9xxyy).
      r.error = "version " + std::to_string(a.GetVersion()) + " is not cuDNN 9";
    }
    if (!r.error.empty() && cudnn_debug()) {
      std::fprintf(stderr, "[conv] cuDNN unavailable (%s): convolutions use im2col\n",
                   r.error.c_str());
    }
    return r;
  }();
  return l;
}

}  // namespace

bool cudnn_debug() {
  static const bool on = [] {
    const char* v = std::getenv("MLX_CUDNN_DEBUG");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  return on;
}

const CudnnApi* cudnn_api(std::string* error) {
  const Loaded& l = loaded();
  if (error) {
    *error = l.error;
  }
  return l.error.empty() ? &l.api : nullptr;
}

void* cudnn_library() {
  const Loaded& l = loaded();
  return l.error.empty() ? l.library : nullptr;
}

CudnnDevice* cudnn_device(int index) {
  const CudnnApi* api = cudnn_api();
  if (!api) {
    return nullptr;
  }
  static std::mutex mutex;
  static auto* devices = new std::map<int, CudnnDevice*>();  // leaked, like the handles
  std::lock_guard<std::mutex> lock(mutex);
  auto it = devices->find(index);
  if (it != devices->end()) {
    return it->second;
  }
  CudnnDevice* d = nullptr;
  cudnnHandle_t handle = nullptr;
  DeviceScope scope(index);
  cudnnStatus_t status = api->Create(&handle);
  if (status == CUDNN_STATUS_SUCCESS) {
    d = new CudnnDevice();
    d->handle = handle;
  } else if (cudnn_debug()) {
    std::fprintf(stderr, "[conv] cudnnCreate failed on GPU %d (%s): convolutions use im2col\n",
                 index, api->GetErrorString(status));
  }
  (*devices)[index] = d;
  return d;
}

void cudnn_set_stream(const CudnnApi& api, CudnnDevice& dev, cudaStream_t stream, const char* op) {
  if (dev.stream == stream && stream != nullptr) {
    return;
  }
  cudnn_check(api.SetStream(dev.handle, stream), "cudnnSetStream", op);
  dev.stream = stream;
}

void cudnn_check(cudnnStatus_t status, const char* call, const char* op) {
  if (status == CUDNN_STATUS_SUCCESS) {
    return;
  }
  const CudnnApi* api = cudnn_api();
  const char* what = api ? api->GetErrorString(status) : "cuDNN unavailable";
  const char* evaluating = allocator::current_op();
  throw std::runtime_error(
      std::string("[") + op + "] " + call + " failed: " + what +
      (evaluating ? std::string(" (while evaluating ") + evaluating + ")" : std::string()));
}

CudnnConvDescriptors make_conv_descriptors(const CudnnApi& api, const CudnnConvPlan& plan,
                                           Dtype dtype, cudnnMathType_t math) {
  const cudnnDataType_t type = dtype == float16    ? CUDNN_DATA_HALF
                               : dtype == bfloat16 ? CUDNN_DATA_BFLOAT16
                                                   : CUDNN_DATA_FLOAT;
  const int nb = static_cast<int>(plan.x_dims.size());
  CudnnConvDescriptors d;
  auto tensor = [&](cudnnTensorDescriptor_t* t, const std::vector<int>& dims) {
    cudnn_check(api.CreateTensorDescriptor(t), "cudnnCreateTensorDescriptor", "conv");
    auto wide = cudnn_nhwc_strides(dims);
    std::vector<int> strides(wide.begin(), wide.end());
    cudnn_check(api.SetTensorNdDescriptor(*t, type, nb, dims.data(), strides.data()),
                "cudnnSetTensorNdDescriptor", "conv");
  };
  tensor(&d.x, plan.x_dims);
  tensor(&d.y, plan.y_dims);
  cudnn_check(api.CreateFilterDescriptor(&d.w), "cudnnCreateFilterDescriptor", "conv");
  cudnn_check(api.SetFilterNdDescriptor(d.w, type, CUDNN_TENSOR_NHWC, nb, plan.w_dims.data()),
              "cudnnSetFilterNdDescriptor", "conv");
  cudnn_check(api.CreateConvolutionDescriptor(&d.conv), "cudnnCreateConvolutionDescriptor", "conv");
  cudnn_check(
      api.SetConvolutionNdDescriptor(
          d.conv, nb - 2, plan.pad.data(), plan.stride.data(), plan.dilation.data(),
          plan.convolution_mode ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
      "cudnnSetConvolutionNdDescriptor", "conv");
  cudnn_check(api.SetConvolutionGroupCount(d.conv, plan.groups), "cudnnSetConvolutionGroupCount",
              "conv");
  cudnn_check(api.SetConvolutionMathType(d.conv, math), "cudnnSetConvolutionMathType", "conv");
  return d;
}

bool cudnn_agrees(const CudnnApi& api, const CudnnConvDescriptors& d, const CudnnConvPlan& plan) {
  const bool forward = plan.op == CudnnConvPlan::Op::forward;
  std::vector<int> dims(plan.x_dims.size());
  cudnn_check(api.GetConvolutionNdForwardOutputDim(d.conv, forward ? d.x : d.y, d.w,
                                                   static_cast<int>(dims.size()), dims.data()),
              "cudnnGetConvolutionNdForwardOutputDim", "conv");
  return dims == (forward ? plan.y_dims : plan.x_dims);
}

}  // namespace mlx::core::cu
