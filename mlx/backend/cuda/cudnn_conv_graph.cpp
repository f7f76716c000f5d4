// Convolutions through cuDNN's frontend graphs (see cudnn_conv_graph.h).
#include "mlx/backend/cuda/cudnn_conv_graph.h"

#include <unordered_map>

#include "mlx/backend/cuda/cudnn_graph.h"

namespace mlx::core::cu {

struct ConvGraph {
  CudnnGraph built;
};

namespace {

using Tensor = std::shared_ptr<fe::graph::Tensor_attributes>;

// The legacy path's buffers: cuDNN's x, w and y.
enum Uid : int64_t { kX = 1, kW, kY };

// Plans needing more workspace are never built or tried (the legacy path's Find limit).
constexpr int64_t kMaxWorkspace = int64_t(256) << 20;

// A packed channels-last operand with cuDNN's dimensions (N, C, spatial...).
fe::graph::Tensor_attributes operand(const char* name, Uid uid, const std::vector<int>& dims) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim(as_int64(dims))
      .set_stride(cudnn_nhwc_strides(dims));
}

void mark_output(const Tensor& t, Uid uid, const std::vector<int>& dims) {
  t->set_output(true).set_uid(uid).set_dim(as_int64(dims)).set_stride(cudnn_nhwc_strides(dims));
}

// The plan's symmetric padding, stride, dilation and mode, as any of the three nodes takes them.
template <typename Attributes>
Attributes geometry(const CudnnConvPlan& plan, const char* name) {
  Attributes a;
  a.set_name(name)
      .set_padding(as_int64(plan.pad))
      .set_stride(as_int64(plan.stride))
      .set_dilation(as_int64(plan.dilation))
      .set_convolution_mode(plan.convolution_mode ? fe::ConvolutionMode_t::CONVOLUTION
                                                  : fe::ConvolutionMode_t::CROSS_CORRELATION);
  return a;
}

std::shared_ptr<fe::graph::Graph> conv_graph(const CudnnConvPlan& plan, ConvPass pass,
                                             Dtype dtype) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(dtype == float16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  switch (pass) {
    case ConvPass::forward: {
      Tensor y = g->conv_fprop(g->tensor(operand("x", kX, plan.x_dims)),
                               g->tensor(operand("w", kW, plan.w_dims)),
                               geometry<fe::graph::Conv_fprop_attributes>(plan, "conv"));
      mark_output(y, kY, plan.y_dims);
      break;
    }
    case ConvPass::backward_data: {
      // As in the legacy call: dy is our input (x's buffer), dx our output (y's).
      Tensor dx = g->conv_dgrad(g->tensor(operand("dy", kX, plan.x_dims)),
                                g->tensor(operand("w", kW, plan.w_dims)),
                                geometry<fe::graph::Conv_dgrad_attributes>(plan, "conv_dgrad"));
      mark_output(dx, kY, plan.y_dims);
      break;
    }
    case ConvPass::backward_filter: {
      // dy is the cotangent (y's buffer); the filter's derivative goes to w's.
      Tensor dw = g->conv_wgrad(g->tensor(operand("dy", kY, plan.y_dims)),
                                g->tensor(operand("x", kX, plan.x_dims)),
                                geometry<fe::graph::Conv_wgrad_attributes>(plan, "conv_wgrad"));
      mark_output(dw, kW, plan.w_dims);
      break;
    }
  }
  return g;
}

std::unordered_map<int64_t, void*> pack_of(const void* x, const void* w, const void* y) {
  return {{kX, const_cast<void*>(x)}, {kW, const_cast<void*>(w)}, {kY, const_cast<void*>(y)}};
}

}  // namespace

std::shared_ptr<ConvGraph> make_conv_graph(cudnnHandle_t handle, const CudnnConvPlan& plan,
                                           ConvPass pass, Dtype dtype, const void* x, const void* w,
                                           const void* y, std::string* why) {
  bind_frontend();
  auto g = conv_graph(plan, pass, dtype);
  g->deselect_workspace_greater_than(kMaxWorkspace);
  auto made = std::make_shared<ConvGraph>();
  // Engines compiled at run time (NVRTC) are left out: building every candidate of a ResNet's
  // few dozen geometries would take seconds each, where the precompiled ones match the legacy
  // path's choices.
  made->built =
      build_graph(std::move(g), handle, fe::BuildPlanPolicy_t::ALL, [](fe::graph::Graph& graph) {
        graph.deselect_behavior_notes({fe::BehaviorNote_t::RUNTIME_COMPILATION});
      });
  CudnnGraph& built = made->built;
  if (!built.graph) {
    *why = built.why;
    return nullptr;
  }
  // Every built plan timed on these operands, the fastest kept (the heuristics' order can be
  // several times off for small layers); where timing fails, the heuristics' first stays.
  auto pack = pack_of(x, w, y);
  Scratch workspace(static_cast<size_t>(built.graph->get_autotune_workspace_size()));
  (void)built.graph->autotune(handle, pack, workspace.as<void>());
  built.workspace = built.graph->get_workspace_size();
  return made;
}

void run_conv_graph(const ConvGraph& g, cudnnHandle_t handle, const void* x, const void* w,
                    const void* y) {
  auto pack = pack_of(x, w, y);
  run_graph(g.built, handle, pack, "conv", "convolution graph");
}

std::string conv_graph_engine(const ConvGraph& g) { return plan_name(g.built); }

}  // namespace mlx::core::cu
