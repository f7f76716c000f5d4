#include "mlx/backend/cpu/compiled_jit.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "mlx/backend/common/jit_cache.h"

namespace mlx::core::cpu {

namespace {

constexpr size_t kMaxGeneratedOps = 256;
constexpr size_t kMaxGeneratedCalls = 32;

// The vec.h expression of each op the generator handles, @ and # its operands. Each
// equals the unfused kernel bit for bit: float32 unary ops and the activations' vjps there run
// the same vec.h function (simd/vmath.cpp), arithmetic is IEEE, and the functors' NaN and
// signed-zero rules are kept.
std::optional<std::string> unary_expr(UnaryOp op) {
  switch (op) {
#define VEC(OP, FN) \
  case UnaryOp::OP: \
    return std::string(FN "(@)");
    VEC(Exp, "exp")
    VEC(Expm1, "expm1")
    VEC(Log, "log")
    VEC(Log1p, "log1p")
    VEC(Log2, "log2")
    VEC(Log10, "log10")
    VEC(Sin, "sin")
    VEC(Cos, "cos")
    VEC(Tan, "tan")
    VEC(Tanh, "tanh")
    VEC(Sigmoid, "sigmoid")
    VEC(Erf, "erf")
    VEC(ErfInv, "erfinv")
    VEC(Gelu, "gelu")
    VEC(GeluApprox, "gelu_approx")
    VEC(Silu, "silu")
    VEC(Sinh, "sinh")
    VEC(Cosh, "cosh")
    VEC(ArcTan, "atan")
    VEC(ArcSin, "asin")
    VEC(ArcCos, "acos")
    VEC(ArcSinh, "asinh")
    VEC(ArcCosh, "acosh")
    VEC(ArcTanh, "atanh")
    VEC(Sqrt, "sqrt")
    VEC(Rsqrt, "rsqrt")
#undef VEC
    case UnaryOp::Negative:
      return "-@";
    case UnaryOp::Square:
      return "@ * @";
    case UnaryOp::Abs:  // x < 0 ? -x : x keeps -0 and NaN as they are
      return "select(@ < broadcast(0.0f), -@, @)";
    default:
      return std::nullopt;
  }
}

std::optional<std::string> binary_expr(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "@ + #";
    case BinaryOp::Subtract:
      return "@ - #";
    case BinaryOp::Multiply:
      return "@ * #";
    case BinaryOp::Divide:
      return "@ / #";
    // NaN a gives a; else max/minps give b when b is NaN, as the functors do.
    case BinaryOp::Maximum:
      return "select(is_nan(@), @, max(@, #))";
    case BinaryOp::Minimum:
      return "select(is_nan(@), @, min(@, #))";
    case BinaryOp::GeluVjp:
      return "gelu_vjp(@, #)";
    case BinaryOp::GeluApproxVjp:
      return "gelu_approx_vjp(@, #)";
    case BinaryOp::SiluVjp:
      return "silu_vjp(@, #)";
    default:
      return std::nullopt;
  }
}

std::string replace_ab(std::string e, const std::string& a, const std::string& b) {
  std::string out;
  for (char ch : e) {
    if (ch == '@' || ch == '#') {
      out += ch == '@' ? a : b;
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> jit_source(const Compiled& c, const std::vector<char>& scalar_inputs,
                                      const std::vector<int>& outputs, const std::string& name) {
  const int nin = c.num_inputs();
  // Compile time grows faster than the region (every vec.h call is inlined): very long regions
  // (stress graphs, fully unrolled loops) stay interpreted.
  if (c.ops().size() > kMaxGeneratedOps) {
    return std::nullopt;
  }
  for (int i = 0; i < nin; ++i) {
    if (c.input_dtypes()[i] != float32) {
      return std::nullopt;
    }
  }
  std::ostringstream body;
  size_t calls = 0;  // inlined vec.h functions: they dominate the compile time
  for (size_t k = 0; k < c.ops().size(); ++k) {
    const FusedOp& op = c.ops()[k];
    if (op.dtype != float32) {
      return std::nullopt;
    }
    std::optional<std::string> e;
    if (op.kind == FusedOp::Kind::unary) {
      e = unary_expr(static_cast<UnaryOp>(op.code));
    } else if (op.kind == FusedOp::Kind::binary) {
      e = binary_expr(static_cast<BinaryOp>(op.code));
    }
    if (!e || (e->find("(@") != std::string::npos && ++calls > kMaxGeneratedCalls)) {
      return std::nullopt;
    }
    auto operand = [&](int a) {
      std::string name = "(v";
      name += std::to_string(op.args[a]);
      name += ')';
      return name;
    };
    body << "    VecF v" << nin + k << " = "
         << replace_ab(*e, operand(0), op.num_args() > 1 ? operand(1) : "") << ";\n";
  }
  std::ostringstream src;
  src << "extern \"C\" void " << name << "(const void* const* in, void* const* out, int64_t n) {\n";
  for (int i = 0; i < nin; ++i) {
    src << "  const float* i" << i << " = static_cast<const float*>(in[" << i << "]);\n";
    if (scalar_inputs[i]) {
      src << "  const VecF s" << i << " = broadcast(i" << i << "[0]);\n";
    }
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    src << "  float* o" << j << " = static_cast<float*>(out[" << j << "]);\n";
  }
  // One body, twice: full lane groups, then the masked tail.
  for (int tail = 0; tail < 2; ++tail) {
    src << (tail ? "  if (i < n) {\n    const int r = static_cast<int>(n - i);\n"
                 : "  int64_t i = 0;\n  for (; i + kWidth <= n; i += kWidth) {\n");
    for (int k = 0; k < nin; ++k) {
      src << "    VecF v" << k << " = ";
      if (scalar_inputs[k]) {
        src << "s" << k << ";\n";
      } else {
        src << (tail ? "load_partial(i" : "load(i") << k << " + i" << (tail ? ", r" : "") << ");\n";
      }
    }
    src << body.str();
    for (size_t j = 0; j < outputs.size(); ++j) {
      src << (tail ? "    store_partial(o" : "    store(o") << j << " + i, v" << outputs[j]
          << (tail ? ", r" : "") << ");\n";
    }
    src << "  }\n";
  }
  src << "}\n";
  return src.str();
}

namespace {

bool header_exists() {
  struct stat st;
  return ::stat((std::string(MLX_JIT_SOURCE_DIR) + "/mlx/backend/cpu/simd/vec.h").c_str(), &st) ==
         0;
}

void* open_library(const std::string& path, const std::string& name) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    return nullptr;
  }
  void* fn = ::dlsym(handle, name.c_str());
  if (!fn) {
    ::dlclose(handle);
  }
  return fn;
}

JitCache& cache() {
  static auto* c = new JitCache({
      "cpu",
      // Its flags are part of each kernel's key.
      std::string("// mlx-linux fused kernel; flags: ") + MLX_JIT_FLAGS +
          "\n#include <cstdint>\n#include \"mlx/backend/cpu/simd/vec.h\"\n"
          "using namespace mlx::core::simd;\n",
      ".so",
      JitCache::command_build(".cpp",
                              [](const std::string& src, const std::string& out) {
                                const char* cxx = std::getenv("MLX_JIT_CXX");
                                return std::string(cxx ? cxx : MLX_JIT_CXX) + " " + MLX_JIT_FLAGS +
                                       " -I" + MLX_JIT_SOURCE_DIR + " " + src + " -o " + out;
                              }),
      open_library,
      header_exists(),
      1,
  });  // leaked: regions may run during static destruction
  return *c;
}
// Registered from the start, so that the switches and statistics reach it before first use.
const bool registered = (cache(), true);

}  // namespace

BlockKernel jit_kernel(const Compiled& c, const std::vector<char>& scalar_inputs,
                       const std::vector<int>& outputs) {
  std::string key;
  for (char s : scalar_inputs) {
    key += s ? 's' : 'd';
  }
  key += c.code();
  for (int o : outputs) {
    key += ' ';
    key += std::to_string(o);
  }
  return reinterpret_cast<BlockKernel>(cache().lookup(
      key, [&](const std::string& name) { return jit_source(c, scalar_inputs, outputs, name); }));
}

}  // namespace mlx::core::cpu
