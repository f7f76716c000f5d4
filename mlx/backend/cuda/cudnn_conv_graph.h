// Convolutions through cuDNN's frontend graphs (cudnn_conv_graph.cpp): the legacy calls' own
// mapping (CudnnConvPlan) as a conv_fprop, conv_dgrad or conv_wgrad graph whose execution plan
// is built and autotuned once per geometry and kept. A call then costs one graph execution,
// where the legacy cudnnConvolution* calls set up again on every call (tens of microseconds,
// more than a small layer's kernel). float16 and bfloat16 only: float32 keeps the legacy path,
// whose math type enforces FMA kernels unless TF32 is asked for.
#pragma once

#include <memory>
#include <string>

#include "mlx/backend/common/cudnn_conv_plan.h"
#include "mlx/backend/cuda/cudnn_api.h"

namespace mlx::core::cu {

// Which cuDNN computation runs: the forward convolution, its data derivative (our transposed
// convolutions) or its filter derivative (ConvWeightGrad).
enum class ConvPass { forward, backward_data, backward_filter };

struct ConvGraph;  // a built, autotuned graph

#ifdef MLX_CUDA_HAS_CUDNN_FRONTEND

// The graph for `pass` of `plan` over `dtype` operands, its plans autotuned on the operands
// x, w and y (cuDNN's: the legacy path's buffers; the one the pass writes is clobbered), with
// the device's cuDNN mutex held and its handle on the current stream. Null, with the reason in
// `why`, where the frontend declines the geometry.
std::shared_ptr<ConvGraph> make_conv_graph(cudnnHandle_t handle, const CudnnConvPlan& plan,
                                           ConvPass pass, Dtype dtype, const void* x, const void* w,
                                           const void* y, std::string* why);

// Runs the pass on x, w and y (it writes y, y as dx, or w). Its engine's name for debug lines.
void run_conv_graph(const ConvGraph& g, cudnnHandle_t handle, const void* x, const void* w,
                    const void* y);
std::string conv_graph_engine(const ConvGraph& g);

#else

inline std::shared_ptr<ConvGraph> make_conv_graph(cudnnHandle_t, const CudnnConvPlan&, ConvPass,
                                                  Dtype, const void*, const void*, const void*,
                                                  std::string* why) {
  *why = "built without cuDNN's frontend headers";
  return nullptr;
}
inline void run_conv_graph(const ConvGraph&, cudnnHandle_t, const void*, const void*, const void*) {
}
inline std::string conv_graph_engine(const ConvGraph&) { return {}; }

#endif

}  // namespace mlx::core::cu
