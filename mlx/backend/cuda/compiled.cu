// Compiled::eval_gpu: a fused region as one generated CUDA kernel. The kernel calls the same
// device functors as the unfused kernels (elementwise_ops.cuh, cast_to), one thread per output
// element, every value in registers; inputs are read dense, as one broadcast scalar, or through
// strides over the output's shape. nvcc builds it in the background once a region runs a second
// time (backend/common/jit_cache.h, keyed on the ops, dtypes, input access kinds and the GPU's
// architecture, never on shapes); until it is ready, and for regions with a reduction, the
// region runs op by op: its expand()ed
// primitives, each with its own GPU kernel (run_graph.h). Either way the results are the
// unfused graph's.
#include <cuda_runtime.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "mlx/backend/common/jit_cache.h"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/run_graph.h"
#include "mlx/primitives/compiled.h"

namespace mlx::core {

namespace {

constexpr int kFusedMaxDims = 8;
constexpr int kMaxInputs = 24;
constexpr size_t kMaxOps = 256;

enum class Access : char { dense = 'd', scalar = 's', strided = 'g' };

const char* device_type(Dtype t) {
  switch (t.val) {
    case Dtype::Val::bool_:
      return "bool";
    case Dtype::Val::uint8:
      return "uint8_t";
    case Dtype::Val::uint16:
      return "uint16_t";
    case Dtype::Val::uint32:
      return "uint32_t";
    case Dtype::Val::uint64:
      return "uint64_t";
    case Dtype::Val::int8:
      return "int8_t";
    case Dtype::Val::int16:
      return "int16_t";
    case Dtype::Val::int32:
      return "int32_t";
    case Dtype::Val::int64:
      return "int64_t";
    case Dtype::Val::float16:
      return "__half";
    case Dtype::Val::bfloat16:
      return "__nv_bfloat16";
    case Dtype::Val::float32:
      return "float";
    case Dtype::Val::float64:
      return "double";
    case Dtype::Val::complex64:
      return "complex_t";
  }
  return nullptr;
}

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

// The kernel `name` for a region whose inputs are read as `access` says, built for sm_`sm`.
std::string source(const Compiled& c, const std::string& access, const std::string& name,
                   const std::string& sm) {
  const int nin = c.num_inputs();
  std::vector<int> slot(nin, -1);  // strided inputs' rows in the strides table
  int nstrided = 0;
  for (int i = 0; i < nin; ++i) {
    if (access[i] == static_cast<char>(Access::strided)) {
      slot[i] = nstrided++;
    }
  }
  std::ostringstream s;
  s << "// for sm_" << sm << "\n";  // the artifact's disk key holds the target
  s << params_struct(name, nin, static_cast<int>(c.output_values().size()), nstrided);
  s << "extern \"C\" __global__ void " << name << "(" << name << "_params p) {\n"
    << "  const long long step = (long long)gridDim.x * blockDim.x;\n"
    << "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; "
       "i += step) {\n";
  if (nstrided > 0) {
    s << "    long long off[" << nstrided << "] = {};\n"
      << "    long long r = i;\n"
      << "    for (int d = p.ndim - 1; d >= 0; --d) {\n"
      << "      const long long q = r / p.shape[d], at = r - q * p.shape[d];\n"
      << "      for (int k = 0; k < " << nstrided << "; ++k) off[k] += at * p.strides[k][d];\n"
      << "      r = q;\n    }\n";
  }
  for (int i = 0; i < nin; ++i) {
    const char* t = device_type(c.input_dtypes()[i]);
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
        s << "cast_to<" << device_type(op.dtype) << ">(v" << op.args[0] << ")";
        break;
    }
    s << ";\n";
  }
  for (size_t j = 0; j < c.output_values().size(); ++j) {
    const int v = c.output_values()[j];
    const char* t = device_type(c.value_dtype(v));
    s << "    static_cast<" << t << "*>(p.out[" << j << "])[i] = v" << v << ";\n";
  }
  s << "  }\n}\n";
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
          "using namespace mlx::core::cu;\n",
      ".cu", ".cubin",
      [](const std::string& src, const std::string& out) {
        const char* nvcc = std::getenv("MLX_JIT_NVCC");
        return std::string(nvcc ? nvcc : MLX_JIT_NVCC) + " " + MLX_JIT_NVCC_FLAGS +
               " -cubin -arch=sm_" + compute_capability() + " -I" + MLX_JIT_SOURCE_DIR + " -o " +
               out + " " + src;
      },
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
  put(8 * (nin + nout), static_cast<long long>(outputs[0].size()));
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
  if (c.has_reduction() || c.ops().size() > kMaxOps) {
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
    return source(c, *access, name, compute_capability());
  });
}

}  // namespace

void Compiled::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const Shape shape = outputs[0].shape();
  std::string access;
  void* kernel = outputs[0].size() == 0 ? nullptr : generated_kernel(*this, inputs, shape, &access);
  if (!kernel) {
    cu::run_graph_into(expand(inputs), outputs);
    return;
  }
  for (auto& o : outputs) {
    cu::allocate(o);
  }
  std::vector<char> params = parameters(inputs, outputs, access, shape);
  void* args[] = {params.data()};
  cudaError_t err =
      cudaLaunchKernel(static_cast<const void*>(kernel), dim3(cu::blocks_for(outputs[0].size())),
                       dim3(cu::kThreads), args, 0, cu::stream());
  if (err != cudaSuccess) {
    // A launch error is not sticky: say why once, then run this and later regions op by op.
    cudaGetLastError();
    cache().report_unusable(cudaGetErrorString(err));
    cu::run_graph_into(expand(inputs), outputs);
  }
}

}  // namespace mlx::core
