// Compiled::eval_gpu: a fused region as one generated CUDA kernel (compiled_source.h). The kernel
// calls the same device functors as the unfused kernels (elementwise_ops.cuh, cast_to), one
// thread per output element, every value in registers; inputs are read dense, as one broadcast
// scalar, or through strides over the output's shape. NVRTC builds it in process on the cache's
// background thread at the region's first run (backend/common/jit_cache.h, keyed on the ops,
// dtypes, input access kinds and the GPU's architecture, never on shapes; cubins kept on disk);
// until it is ready, or when the build failed, the region runs op by op: its expand()ed
// primitives, each with its own GPU kernel (run_graph.h). A region with a reduction epilogue
// (a float32 Sum / Max / Min over its trailing axes) becomes one block per row that reduces
// the value as it computes it. Either way the results are the unfused graph's.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "mlx/backend/common/jit_cache.h"
#include "mlx/backend/cuda/compiled_source.h"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/nvrtc.h"
#include "mlx/backend/cuda/run_graph.h"
#include "mlx/primitives/compiled.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using cu::Access;
using cu::kFusedMaxDims;

constexpr int kMaxInputs = 24;
constexpr size_t kMaxOps = 256;

// Of device 0, the one GPU fused kernels are built for (asked once, not at every evaluation).
int compute_capability() {
  static const int cc = [] {
    const cudaDeviceProp& props = cu::device(0).props;
    return props.major * 10 + props.minor;
  }();
  return cc;
}

void* load_kernel(const std::string& path, const std::string& name) {
  cudaLibrary_t library = nullptr;
  if (cudaLibraryLoadFromFile(&library, path.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0) !=
      cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  cudaKernel_t kernel = nullptr;
  if (cudaLibraryGetKernel(&kernel, library, name.c_str()) != cudaSuccess) {
    cudaGetLastError();
    cudaLibraryUnload(library);
    return nullptr;
  }
  return reinterpret_cast<void*>(kernel);
}

JitCache& cache() {
  // Made at the first fused GPU region, not at load: its prelude names NVRTC's version, and
  // opening NVRTC costs a process that never uses the GPU tens of MB.
  static auto* c = new JitCache({
      "cuda", cu::fused_kernel_prelude(), ".cubin",
      [](const std::string& source, const std::string& out) {
        return cu::build_fused_kernel(source, out, compute_capability());
      },
      load_kernel, !cu::nvrtc_toolkit_include().empty(),
      1,  // a build takes NVRTC a fraction of a second once the headers are parsed
  });     // leaked: regions may run during static destruction
  return *c;
}

// How each input is read over `shape`, or an empty string when the region takes the op-by-op
// path (too many inputs or dimensions).
std::string access_of(const std::vector<array>& inputs, const Shape& shape) {
  if (inputs.size() > static_cast<size_t>(kMaxInputs) || shape.size() > size_t(kFusedMaxDims)) {
    return "";
  }
  std::string access;
  for (auto& in : inputs) {
    if (in.size() == 1) {
      access += static_cast<char>(Access::scalar);
    } else if (in.shape() == shape && cu::is_dense(in)) {
      access += static_cast<char>(Access::dense);
    } else {
      access += static_cast<char>(Access::strided);
    }
  }
  return access;
}

// The parameter block of params_struct, filled at its offsets.
std::vector<char> parameters(const std::vector<array>& inputs, std::vector<array>& outputs,
                             const std::string& access, const Shape& shape) {
  const size_t nin = inputs.size(), nout = outputs.size();
  int nstrided = 0;
  for (char a : access) {
    nstrided += a == static_cast<char>(Access::strided);
  }
  const size_t strides_at = 8 * (nin + nout) + 8;
  const size_t ndim_at = strides_at + 8 * kFusedMaxDims * std::max(nstrided, 1);
  const size_t bytes = (ndim_at + 4 + 4 * kFusedMaxDims + 7) / 8 * 8;
  std::vector<char> p(bytes, 0);
  auto put = [&](size_t at, const auto& v) { std::memcpy(p.data() + at, &v, sizeof(v)); };
  for (size_t i = 0; i < nin; ++i) {
    put(8 * i, static_cast<const void*>(inputs[i].gpu_data<char>()));
  }
  for (size_t j = 0; j < nout; ++j) {
    put(8 * (nin + j), static_cast<void*>(outputs[j].gpu_data<char>()));
  }
  put(8 * (nin + nout), static_cast<long long>(shape_size(shape)));
  const int ndim = static_cast<int>(shape.size());
  int row = 0;
  for (size_t i = 0; i < nin; ++i) {
    if (access[i] != static_cast<char>(Access::strided)) {
      continue;
    }
    // Strides over the output's shape: leading and size-1 (broadcast) axes step by 0.
    const array& in = inputs[i];
    const int lead = ndim - static_cast<int>(in.ndim());
    for (int d = 0; d < ndim; ++d) {
      const int k = d - lead;
      long long stride = k < 0 || in.shape(k) == 1 ? 0 : static_cast<long long>(in.strides()[k]);
      put(strides_at + 8 * (kFusedMaxDims * row + d), stride);
    }
    ++row;
  }
  put(ndim_at, ndim);
  for (int d = 0; d < ndim; ++d) {
    put(ndim_at + 4 + 4 * d, static_cast<int>(shape[d]));
  }
  return p;
}

// The generated kernel for this region and these inputs, or null (op by op).
void* generated_kernel(const Compiled& c, const std::vector<array>& inputs, const Shape& shape,
                       std::string* access) {
  if (c.ops().size() > kMaxOps) {
    return nullptr;
  }
  *access = access_of(inputs, shape);
  if (access->empty()) {
    return nullptr;
  }
  std::string key = "sm" + std::to_string(compute_capability()) + " " + *access + "\n" + c.code();
  for (int o : c.output_values()) {
    key += " " + std::to_string(o);
  }
  return cache().lookup(key, [&](const std::string& name) -> std::optional<std::string> {
    return cu::fused_kernel_source(c, *access, name, compute_capability());
  });
}

}  // namespace

void Compiled::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  // The region's shape: its elementwise outputs', or (a reduction alone) its inputs' broadcast.
  Shape shape;
  if (outputs_.empty()) {
    std::vector<Shape> shapes;
    for (auto& in : inputs) {
      shapes.push_back(in.shape());
    }
    shape = broadcast_shapes(shapes, "Compiled");
  } else {
    shape = outputs[0].shape();
  }
  const int64_t total = static_cast<int64_t>(shape_size(shape));
  int64_t row = 1;
  for (int a : reduction_.axes) {
    row *= shape[a];
  }
  // A block per row cannot fill the GPU with a few long rows (a full sum of a large array would
  // run on one SM): those regions keep the unfused reduction, which splits rows across blocks.
  const bool few_long_rows =
      has_reduction() && row > 4096 && total / std::max<int64_t>(row, 1) < 256;
  std::string access;
  void* kernel =
      total == 0 || few_long_rows ? nullptr : generated_kernel(*this, inputs, shape, &access);
  if (!kernel) {
    cu::run_graph_into(expand(inputs), outputs);
    return;
  }
  for (auto& o : outputs) {
    cu::allocate(o);
  }
  std::vector<char> params = parameters(inputs, outputs, access, shape);
  void* args[] = {params.data()};
  dim3 blocks(cu::blocks_for(total)), threads(cu::kThreads);
  if (has_reduction()) {
    blocks = dim3(static_cast<unsigned>(std::min<int64_t>(total / row, 65535)));
    threads = dim3(static_cast<unsigned>(std::min<int64_t>(cu::kThreads, (row + 31) / 32 * 32)));
  }
  cudaError_t err =
      cudaLaunchKernel(static_cast<const void*>(kernel), blocks, threads, args, 0, cu::stream());
  if (err != cudaSuccess) {
    // A launch error is not sticky: say why once, then run this and later regions op by op.
    cudaGetLastError();
    cache().report_unusable(cudaGetErrorString(err));
    cu::run_graph_into(expand(inputs), outputs);
  }
}

}  // namespace mlx::core
