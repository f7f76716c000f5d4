#include "mlx/backend/cuda/compiled_source.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "mlx/backend/common/cuda_type_names.h"
#include "mlx/backend/cuda/nvrtc.h"
#include "mlx/primitives/reduction.h"

namespace mlx::core::cu {

namespace {

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

// The kernel of a region without reduction: a grid-stride loop over its elements.
std::string elementwise_source(const Compiled& c, const std::string& access,
                               const std::string& name, int sm) {
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
// grid-stride loop); each thread computes elements of the row as elementwise_source() does and
// folds the reduced value into a float, then the block combines (warp shuffles, one word per warp).
// The reduced output follows the elementwise ones in p.out. Max and Min propagate NaN as the
// unfused reductions do.
std::string reduce_source(const Compiled& c, const std::string& access, const std::string& name,
                          int sm) {
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

// The compile's options, part of each kernel's disk key through the prelude. --pch first (NVRTC
// wants it there): the headers are parsed once per process (most of a compile's time) and
// reused from a precompiled header by the later kernels with the same prelude.
const std::vector<std::string>& options() {
  static const std::vector<std::string> o = {"--pch", "-std=c++20"};
  return o;
}

}  // namespace

std::string fused_kernel_source(const Compiled& c, const std::string& access,
                                const std::string& name, int arch) {
  return c.has_reduction() ? reduce_source(c, access, name, arch)
                           : elementwise_source(c, access, name, arch);
}

const std::string& fused_kernel_prelude() {
  static const std::string p = [] {
    std::string s = "// mlx-linux fused CUDA kernel; " + nvrtc_fingerprint() + "; options:";
    for (auto& o : options()) {
      s += " " + o;
    }
    return s +
           "\n#include \"mlx/backend/cuda/elementwise_ops.cuh\"\n"
           "using namespace mlx::core::cu;\nusing complex64_t = complex_t;\n";
  }();
  return p;
}

std::optional<std::string> build_fused_kernel(const std::string& source, const std::string& out,
                                              int arch) {
  NvrtcResult r = nvrtc_compile(source, "mlx_fused.cu", arch, options());
  if (r.cubin.empty()) {
    return r.error;
  }
  std::ofstream f(out, std::ios::binary);
  f.write(r.cubin.data(), static_cast<std::streamsize>(r.cubin.size()));
  f.close();
  if (!f) {
    return "cannot write " + out;
  }
  return std::nullopt;
}

}  // namespace mlx::core::cu
