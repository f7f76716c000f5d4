// cuDNN, loaded at run time (cudnn_api.cpp): the library builds and runs without it, and
// convolutions use im2col where it is missing. cudnn.h is included for its types only; every
// call goes through the function pointers below.
#pragma once

#include <cudnn.h>

#include <mutex>
#include <string>
#include <vector>

#include "mlx/backend/common/cudnn_conv_plan.h"

namespace mlx::core::cu {

struct CudnnApi {
#define MLX_CUDNN_FN(name) decltype(&::cudnn##name) name = nullptr
  MLX_CUDNN_FN(GetVersion);
  MLX_CUDNN_FN(GetErrorString);
  MLX_CUDNN_FN(Create);
  MLX_CUDNN_FN(SetStream);
  MLX_CUDNN_FN(CreateTensorDescriptor);
  MLX_CUDNN_FN(SetTensorNdDescriptor);
  MLX_CUDNN_FN(CreateFilterDescriptor);
  MLX_CUDNN_FN(SetFilterNdDescriptor);
  MLX_CUDNN_FN(CreateConvolutionDescriptor);
  MLX_CUDNN_FN(SetConvolutionNdDescriptor);
  MLX_CUDNN_FN(SetConvolutionGroupCount);
  MLX_CUDNN_FN(SetConvolutionMathType);
  MLX_CUDNN_FN(GetConvolutionNdForwardOutputDim);
  MLX_CUDNN_FN(GetConvolutionForwardAlgorithmMaxCount);
  MLX_CUDNN_FN(GetConvolutionForwardAlgorithm_v7);
  MLX_CUDNN_FN(GetConvolutionForwardWorkspaceSize);
  MLX_CUDNN_FN(FindConvolutionForwardAlgorithmEx);
  MLX_CUDNN_FN(ConvolutionForward);
  MLX_CUDNN_FN(GetConvolutionBackwardDataAlgorithmMaxCount);
  MLX_CUDNN_FN(GetConvolutionBackwardDataAlgorithm_v7);
  MLX_CUDNN_FN(GetConvolutionBackwardDataWorkspaceSize);
  MLX_CUDNN_FN(FindConvolutionBackwardDataAlgorithmEx);
  MLX_CUDNN_FN(ConvolutionBackwardData);
  MLX_CUDNN_FN(GetConvolutionBackwardFilterAlgorithmMaxCount);
  MLX_CUDNN_FN(GetConvolutionBackwardFilterAlgorithm_v7);
  MLX_CUDNN_FN(GetConvolutionBackwardFilterWorkspaceSize);
  MLX_CUDNN_FN(FindConvolutionBackwardFilterAlgorithmEx);
  MLX_CUDNN_FN(ConvolutionBackwardFilter);
#undef MLX_CUDNN_FN
};

// cuDNN 9's functions, loaded once: MLX_CUDNN_LIBNAME when set, else libcudnn.so.9 from the
// loader's search path, else the nvidia-cudnn-cu13 wheel's (MLX_CUDNN_WHEEL_LIBNAME, which
// `import mlx` sets where the wheel is installed). Null (and why, under MLX_CUDNN_DEBUG) when
// it does not load, lacks a symbol or is not version 9. `error` receives the reason.
const CudnnApi* cudnn_api(std::string* error = nullptr);

// The library cudnn_api loaded (null where it is unusable): cuDNN's frontend, which builds the
// fused attention graphs, looks its symbols up there.
void* cudnn_library();

// One device's handle (made on first use, on that device), used under `mutex`: a handle
// serves one thread at a time, and each call first sets the caller's stream on it
// (cudnn_set_stream).
struct CudnnDevice {
  std::mutex mutex;
  cudnnHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;  // the stream last set on handle (null: none yet)
};
// The current device's state, or null where cuDNN is unavailable or cudnnCreate fails there.
CudnnDevice* cudnn_device(int device);

// Sets `stream` on dev's handle (dev.mutex held) unless it is the one set last: cudnnSetStream
// makes several driver queries on every call, unchanged stream or not (about 2.5 us of host
// time each). Our streams live as long as the process, so a stream's handle names one stream.
void cudnn_set_stream(const CudnnApi& api, CudnnDevice& dev, cudaStream_t stream, const char* op);

// Whether MLX_CUDNN_DEBUG is set: one line per cuDNN decision (load failures, plans,
// algorithms) on stderr.
bool cudnn_debug();

// A convolution plan's descriptors (never destroyed: they are cached): x and y (cuDNN's x and
// y, or dy and dx), the filter w, and conv with the plan's pad, stride, dilation, mode and
// groups, float accumulation and `math`.
struct CudnnConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
};
CudnnConvDescriptors make_conv_descriptors(const CudnnApi& api, const CudnnConvPlan& plan,
                                           Dtype dtype, cudnnMathType_t math);
// Whether cuDNN's size of the forward convolution (of x; of dx for backward data) is the
// plan's (y; dy).
bool cudnn_agrees(const CudnnApi& api, const CudnnConvDescriptors& d, const CudnnConvPlan& plan);

// Throws "[op] call failed: <cuDNN's status string>" unless status is CUDNN_STATUS_SUCCESS.
void cudnn_check(cudnnStatus_t status, const char* call, const char* op);

}  // namespace mlx::core::cu
