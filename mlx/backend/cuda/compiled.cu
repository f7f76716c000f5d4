// Compiled::eval_gpu: a fused region as one generated CUDA kernel. The kernel calls the same
// device functors as the unfused kernels (elementwise_ops.cuh, cast_to), one thread per output
// element, every value in registers; inputs are read dense, as one broadcast scalar, or through
// strides over the output's shape. nvcc builds it in the background once a region runs a second
// time (backend/common/jit_cache.h, keyed on the ops, dtypes, input access kinds and the GPU's
// architecture, never on shapes); until it is ready the region runs op by op: its expand()ed
// primitives, each with its own GPU kernel (run_graph.h). A region with a reduction epilogue
// (a float32 Sum / Max / Min over its trailing axes) becomes one block per row that reduces
// the value as it computes it. Either way the results are the unfused graph's.
#include <cuda_runtime.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "mlx/backend/common/cuda_type_names.h"
#include "mlx/backend/common/jit_cache.h"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/run_graph.h"
#include "mlx/primitives/compiled.h"
#include "mlx/primitives/reduction.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

constexpr int kFusedMaxDims = 8;
constexpr int kMaxInputs = 24;
constexpr size_t kMaxOps = 256;

enum class Access : char { dense = 'd', scalar = 's', strided = 'g' };

// Of device 0, the one GPU fused kernels are built for (asked once, not at every evaluation).
const std::string& compute_capability() {
  static const std::string cc = [] {
    const cudaDeviceProp& props = cu::device(0).props;
    return std::to_string(props.major * 10 + props.minor);
  }();
  return cc;
}

// The kernel's parameter block, laid out without padding: in[], out[], n, strides[][], ndim,
// shape[] (the host fills the same offsets).
std::string params_struct(const std::string& name, int nin, int nout, int nstrided) {
  std::ostringstream s;
  s << "struct " << name << "_params {\n  const void* in[" << nin << "];\n  void* out[" << nout
    << "];\n  long long n;\n  long long strides[" << std::max(nstrided, 1) << "][" << kFusedMaxDims
    << "];\n  int ndim;\n  int shape[" << kFusedMaxDims << "];\n};\n";
  return s.str();
}

// One element's work at flat index `i` (a long long in scope): the strided inputs' offsets,
// the loads, every op into v<k>, and the stores of the region's elementwise outputs.
std::string element_body(const Compiled& c, const std::string& access) {
  const int nin = c.num_inputs();
  std::vector<int> slot(nin, -1);  // strided inputs' rows in the strides table
  int nstrided = 0;
  for (int i = 0; i < nin; ++i) {
    if (access[i] == static_cast<char>(Access::strided)) {
      slot[i] = nstrided++;
    }
  }
  std::ostringstream s;
  if (nstrided > 0) {
    s << "    long long off[" << nstrided << "] = {};\n"
      << "    long long r = i;\n"
      << "    for (int d = p.ndim - 1; d >= 0; --d) {\n"
      << "      const long long q = r / p.shape[d], at = r - q * p.shape[d];\n"
      << "      for (int k = 0; k < " << nstrided << "; ++k) off[k] += at * p.strides[k][d];\n"
      << "      r = q;\n    }\n";
  }
  for (int i = 0; i < nin; ++i) {
    const char* t = cuda_type_name(c.input_dtypes()[i]);
    s << "    const " << t << " v" << i << " = static_cast<const " << t << "*>(p.in[" << i << "])[";
    switch (static_cast<Access>(access[i])) {
      case Access::dense:
        s << "i";
        break;
      case Access::scalar:
        s << "0";
        break;
      case Access::strided:
        s << "off[" << slot[i] << "]";
        break;
    }
    s << "];\n";
  }
  for (size_t k = 0; k < c.ops().size(); ++k) {
    const FusedOp& op = c.ops()[k];
    s << "    const auto v" << nin + k << " = ";
    switch (op.kind) {
      case FusedOp::Kind::unary:
        s << "op::" << unary_op_name(static_cast<UnaryOp>(op.code)) << "{}(v" << op.args[0] << ")";
        break;
      case FusedOp::Kind::binary:
        s << "op::" << binary_op_name(static_cast<BinaryOp>(op.code)) << "{}(v" << op.args[0]
          << ", v" << op.args[1] << ")";
        break;
      case FusedOp::Kind::select:
        s << "v" << op.args[0] << " ? v" << op.args[1] << " : v" << op.args[2];
        break;
      case FusedOp::Kind::cast:
        s << "cast_to<" << cuda_type_name(op.dtype) << ">(v" << op.args[0] << ")";
        break;
    }
    s << ";\n";
  }
  for (size_t j = 0; j < c.output_values().size(); ++j) {
    const int v = c.output_values()[j];
    const char* t = cuda_type_name(c.value_dtype(v));
    s << "    static_cast<" << t << "*>(p.out[" << j << "])[i] = v" << v << ";\n";
  }
  return s.str();
}

int count_strided(const std::string& access) {
  return static_cast<int>(
      std::count(access.begin(), access.end(), static_cast<char>(Access::strided)));
}

// The kernel `name` for an elementwise region whose inputs are read as `access` says, built for
// sm_`sm`: a grid-stride loop over the region's elements.
std::string source(const Compiled& c, const std::string& access, const std::string& name,
                   const std::string& sm) {
  std::ostringstream s;
  s << "// for sm_" << sm << "\n";  // the artifact's disk key holds the target
  s << params_struct(name, c.num_inputs(), static_cast<int>(c.output_values().size()),
                     count_strided(access));
  s << "extern \"C\" __global__ void " << name << "(" << name << "_params p) {\n"
    << "  const long long step = (long long)gridDim.x * blockDim.x;\n"
    << "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; "
       "i += step) {\n"
    << element_body(c, access) << "  }\n}\n";
  return s.str();
}

// A region with a reduction epilogue: a block per row of the reduced trailing axes (rows in a
// grid-stride loop); each thread computes elements of the row as source() does and folds the
// reduced value into a float, then the block combines (warp shuffles, one word per warp). The
// reduced output follows the elementwise ones in p.out. Max and Min propagate NaN as the
// unfused reductions do.
std::string reduce_source(const Compiled& c, const std::string& access, const std::string& name,
                          const std::string& sm) {
  const FusedReduction& red = c.reduction();
  const int nout = static_cast<int>(c.output_values().size());
  const char* init = red.type == Reduce::Sum   ? "0.0f"
                     : red.type == Reduce::Max ? "-__int_as_float(0x7f800000)"
                                               : "__int_as_float(0x7f800000)";
  const char* combine = red.type == Reduce::Sum   ? "a + b"
                        : red.type == Reduce::Max ? "(a > b || a != a) ? a : b"
                                                  : "(a < b || a != a) ? a : b";
  std::ostringstream s;
  s << "// for sm_" << sm << "\n";
  s << params_struct(name, c.num_inputs(), nout + 1, count_strided(access));
  s << "__device__ __forceinline__ float combine(float a, float b) { return " << combine << "; }\n"
    << "extern \"C\" __global__ void " << name << "(" << name << "_params p) {\n"
    << "  __shared__ float partial[32];\n"
    << "  long long row_len = 1;\n"
    << "  for (int d = p.ndim - " << red.axes.size()
    << "; d < p.ndim; ++d) row_len *= p.shape[d];\n"
    << "  const long long rows = p.n / row_len;\n"
    << "  float* reduced = static_cast<float*>(p.out[" << nout << "]);\n"
    << "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n"
    << "    float acc = " << init << ";\n"
    << "    for (long long j = threadIdx.x; j < row_len; j += blockDim.x) {\n"
    << "    const long long i = row * row_len + j;\n"
    << element_body(c, access) << "    acc = combine(acc, static_cast<float>(v" << red.value
    << "));\n"
    << "    }\n"
    << "    for (int o = 16; o > 0; o /= 2) acc = combine(acc, __shfl_down_sync(0xffffffffu, acc, "
       "o));\n"
    << "    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = acc;\n"
    << "    __syncthreads();\n"
    << "    if (threadIdx.x < 32) {\n"
    << "      acc = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : " << init << ";\n"
    << "      for (int o = 16; o > 0; o /= 2) acc = combine(acc, __shfl_down_sync(0xffffffffu, "
       "acc, o));\n"
    << "      if (threadIdx.x == 0) reduced[row] = acc;\n"
    << "    }\n"
    << "    __syncthreads();\n"
    << "  }\n}\n";
  return s.str();
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

bool nvcc_exists() {
  struct stat st;
  const char* nvcc = std::getenv("MLX_JIT_NVCC");
  return ::stat(nvcc ? nvcc : MLX_JIT_NVCC, &st) == 0 &&
         ::stat((std::string(MLX_JIT_SOURCE_DIR) + "/mlx/backend/cuda/elementwise_ops.cuh").c_str(),
                &st) == 0;
}

JitCache& cache() {
  static auto* c = new JitCache({
      "cuda",
      std::string("// mlx-linux fused CUDA kernel; flags: ") + MLX_JIT_NVCC_FLAGS +
          "\n#include \"mlx/backend/cuda/elementwise_ops.cuh\"\n"
          "using namespace mlx::core::cu;\nusing complex64_t = complex_t;\n",
      ".cubin",
      JitCache::command_build(".cu",
                              [](const std::string& src, const std::string& out) {
                                const char* nvcc = std::getenv("MLX_JIT_NVCC");
                                return std::string(nvcc ? nvcc : MLX_JIT_NVCC) + " " +
                                       MLX_JIT_NVCC_FLAGS + " -cubin -arch=sm_" +
                                       compute_capability() + " -I" + MLX_JIT_SOURCE_DIR +
                                       " -o " + out + " " + src;
                              }),
      load_kernel, nvcc_exists(),
      2,  // regions run once (a test, an init) are not worth nvcc's second
  });     // leaked: regions may run during static destruction
  return *c;
}
// Registered from the start, so that the switches and statistics reach it before first use.
const bool registered = (cache(), true);

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
  std::string key = "sm" + compute_capability() + " " + *access + "\n" + c.code();
  for (int o : c.output_values()) {
    key += " " + std::to_string(o);
  }
  return cache().lookup(key, [&](const std::string& name) -> std::optional<std::string> {
    return c.has_reduction() ? reduce_source(c, *access, name, compute_capability())
                             : source(c, *access, name, compute_capability());
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
