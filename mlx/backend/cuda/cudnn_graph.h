// What the users of cuDNN's frontend graphs (fused attention, convolutions) share: the frontend
// itself, bound to the cuDNN library cudnn_api loaded; building a graph's execution plans; the
// device's handle on the current stream; running a built graph with scratch workspace.
// Only files compiled with the frontend's headers include this (CMakeLists.txt); the frontend's
// library handle, cudnn_frontend::cudnn_dlhandle, is defined once, in cudnn_attention.cpp.
#pragma once

#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#include <cudnn_frontend.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlx/backend/cuda/cudnn_api.h"
#include "mlx/backend/cuda/runtime.h"
#include "mlx/backend/cuda/scratch.h"

namespace mlx::core::cu {

namespace fe = cudnn_frontend;

// A geometry's graph with its plans built, or no graph where cuDNN declined it (`why` says why).
struct CudnnGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
  std::string why;
};

// Validates `g` and builds its execution plans from heuristics mode A: every candidate cuDNN
// supports under `policy` (ALL, to autotune among them), or only the heuristics' first.
// `select`, where given, filters the candidates first (the frontend's deselect_* calls).
inline CudnnGraph build_graph(
    std::shared_ptr<fe::graph::Graph> g, cudnnHandle_t handle,
    fe::BuildPlanPolicy_t policy = fe::BuildPlanPolicy_t::HEURISTICS_CHOICE,
    const std::function<void(fe::graph::Graph&)>& select = {}) {
  CudnnGraph built;
  auto ok = [&](fe::error_t status) {
    if (status.is_bad()) {
      built.why = status.get_message();
    }
    return status.is_good();
  };
  try {
    if (!ok(g->validate()) || !ok(g->build_operation_graph(handle)) ||
        !ok(g->create_execution_plans({fe::HeurMode_t::A}))) {
      return built;
    }
    if (select) {
      select(*g);
    }
    if (ok(g->check_support(handle)) && ok(g->build_plans(policy))) {
      built.workspace = g->get_workspace_size();
      built.graph = std::move(g);
    }
  } catch (const std::exception& e) {  // the frontend throws where a symbol is missing
    built.why = e.what();
  }
  return built;
}

// The name of the plan a built graph runs (empty where cuDNN gives none), for debug lines.
inline std::string plan_name(const CudnnGraph& g) {
  std::string name;
  if (g.graph) {
    (void)g.graph->get_plan_name(name);
  }
  return name;
}

// Points the frontend at the cuDNN library cudnn_api loaded; before a graph is first built.
inline void bind_frontend() {
  static const bool bound = (fe::cudnn_dlhandle = cudnn_library()) != nullptr;  // once
  (void)bound;
}

// The current device's cuDNN handle on the current stream, with its mutex held by `lock`; null
// where cuDNN is unavailable. `op` names the caller in errors.
inline CudnnDevice* graph_device(std::unique_lock<std::mutex>& lock, const char* op) {
  const CudnnApi* api = cudnn_api();
  CudnnDevice* dev = api ? cudnn_device(current_device()) : nullptr;
  if (!dev) {
    return nullptr;
  }
  bind_frontend();
  lock = std::unique_lock<std::mutex>(dev->mutex);
  cudnn_set_stream(*api, *dev, stream(), op);
  return dev;
}

// Runs a built graph on `pack` (tensor uid -> device address); `what` names the graph's work in
// the error.
inline void run_graph(const CudnnGraph& g, cudnnHandle_t handle,
                      std::unordered_map<int64_t, void*>& pack, const char* op, const char* what) {
  Scratch workspace(static_cast<size_t>(g.workspace));
  fe::error_t status = g.graph->execute(handle, pack, workspace.as<void>());
  if (status.is_bad()) {
    throw std::runtime_error(std::string("[") + op + "] cuDNN " + what +
                             " failed: " + status.get_message());
  }
}

// Dimensions or strides as the frontend takes them.
template <typename T>
std::vector<int64_t> as_int64(const std::vector<T>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

}  // namespace mlx::core::cu
