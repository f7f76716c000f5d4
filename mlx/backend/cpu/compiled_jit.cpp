#include "mlx/backend/cpu/compiled_jit.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

namespace mlx::core::cpu {

namespace {

constexpr size_t kMaxGeneratedOps = 256;
constexpr size_t kMaxGeneratedCalls = 32;

// The vec.h expression of each op the generator handles, @ and # its operands. Each
// equals the unfused kernel bit for bit: float32 unary ops there run the same vec.h function
// (simd/vmath.cpp), arithmetic is IEEE, and the functors' NaN and signed-zero rules are kept.
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
    VEC(GeluGrad, "gelu_grad")
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
    if (!e || (e->find("(@)") != std::string::npos && ++calls > kMaxGeneratedCalls)) {
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

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

std::string cache_dir() {
  if (const char* d = std::getenv("MLX_KERNEL_CACHE")) {
    return d;
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string base = xdg ? xdg : (home ? std::string(home) + "/.cache" : "/tmp");
  return base + "/mlx-linux/kernels";
}

void make_dirs(const std::string& path) {
  for (size_t p = 1; p <= path.size(); ++p) {
    if (p == path.size() || path[p] == '/') {
      ::mkdir(path.substr(0, p).c_str(), 0755);
    }
  }
}

std::string hex(size_t h) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016zx", h);
  return buf;
}

// What every generated file starts with; its flags are part of each kernel's key.
const std::string& prelude() {
  static const std::string p = std::string("// mlx-linux fused kernel; flags: ") + MLX_JIT_FLAGS +
                               "\n#include <cstdint>\n#include \"mlx/backend/cpu/simd/vec.h\"\n"
                               "using namespace mlx::core::simd;\n";
  return p;
}

struct Kernel {
  std::atomic<BlockKernel> fn{nullptr};
  std::atomic<bool> done{false};
  std::string name, source;
};

class Jit {
 public:
  static Jit& get() {
    static auto* j = new Jit();  // leaked: regions may run during static destruction
    return *j;
  }

  BlockKernel lookup(const Compiled& c, const std::vector<char>& scalars,
                     const std::vector<int>& outputs) {
    if (!enabled_.load(std::memory_order_relaxed)) {
      return nullptr;
    }
    std::string key;
    for (char s : scalars) {
      key += s ? 's' : 'd';
    }
    key += c.code();
    for (int o : outputs) {
      key += ' ';
      key += std::to_string(o);
    }
    std::shared_ptr<Kernel> k;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = kernels_.find(key);
      if (found != kernels_.end()) {
        k = found->second;
      } else {
        k = std::make_shared<Kernel>();
        k->name = "mlx_fused_" + hex(std::hash<std::string>{}(key));
        auto src = jit_source(c, scalars, outputs, k->name);
        kernels_[key] = k;
        if (!src) {
          k->done = true;
          return nullptr;
        }
        k->source = *src;
        if (!load_from_disk(*k)) {
          pending_.push_back(k);
          start_worker();
          cv_.notify_one();
        }
      }
    }
    if (sync_ && !k->done) {
      wait();
    }
    BlockKernel fn = k->fn.load();
    if (fn) {
      ++stats_.memory_hits;
    } else {
      ++stats_.interpreted;
    }
    return fn;
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return pending_.empty() && !building_; });
  }

  void set_enabled(bool on) { enabled_ = on && header_exists(); }

  detail::FusedKernelStats stats() const {
    return {stats_.built.load(), stats_.from_disk.load(), stats_.memory_hits.load(),
            stats_.interpreted.load(), stats_.failed.load()};
  }

 private:
  Jit()
      : enabled_(!env_is("MLX_COMPILE_JIT", "0") && header_exists()),
        sync_(env_is("MLX_COMPILE_JIT", "sync")),
        debug_(std::getenv("MLX_COMPILE_DEBUG") && !env_is("MLX_COMPILE_DEBUG", "0")),
        dir_(cache_dir()) {}

  static bool header_exists() {
    struct stat st;
    return ::stat((std::string(MLX_JIT_SOURCE_DIR) + "/mlx/backend/cpu/simd/vec.h").c_str(), &st) ==
           0;
  }

  std::string path_of(const Kernel& k) const {
    return dir_ + "/" + hex(std::hash<std::string>{}(prelude() + k.source)) + ".so";
  }

  bool open(Kernel& k, const std::string& lib) {
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      return false;
    }
    auto fn = reinterpret_cast<BlockKernel>(::dlsym(handle, k.name.c_str()));
    if (!fn) {
      ::dlclose(handle);
      return false;
    }
    k.fn = fn;
    k.done = true;
    return true;
  }

  bool load_from_disk(Kernel& k) {
    if (open(k, path_of(k))) {
      ++stats_.from_disk;
      return true;
    }
    return false;
  }

  void start_worker() {
    if (worker_started_) {
      return;
    }
    worker_started_ = true;
    std::thread([this] { run(); }).detach();
  }

  // Builds pending kernels one file each (a file per kernel keeps the disk cache per kernel).
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return !pending_.empty(); });
      std::shared_ptr<Kernel> k = pending_.front();
      pending_.pop_front();
      building_ = true;
      lock.unlock();
      build(*k);
      lock.lock();
      building_ = false;
      if (pending_.empty()) {
        idle_.notify_all();
      }
    }
  }

  void build(Kernel& k) {
    make_dirs(dir_);
    std::string lib = path_of(k);
    std::string tmp = lib + "." + std::to_string(::getpid()) + ".tmp";
    std::string src = tmp + ".cpp";
    {
      std::ofstream f(src);
      f << prelude() << k.source;
    }
    const char* cxx = std::getenv("MLX_JIT_CXX");
    // At the lowest priority: the compiler must not slow down the work it is building for.
    std::string cmd = "nice -n 19 " + std::string(cxx ? cxx : MLX_JIT_CXX) + " " + MLX_JIT_FLAGS +
                      " -I" + MLX_JIT_SOURCE_DIR + " " + src + " -o " + tmp + " 2>&1";
    if (debug_) {
      std::cerr << "[compile] building " << k.name << ":\n" << k.source;
    }
    std::string log;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[512];
      while (std::fgets(buf, sizeof(buf), p)) {
        log += buf;
      }
      int rc = ::pclose(p);
      if (rc == 0 && std::rename(tmp.c_str(), lib.c_str()) == 0 && open(k, lib)) {
        ++stats_.built;
      } else {
        ++stats_.failed;
        std::cerr << "[compile] building fused kernel " << k.name << " failed; it runs "
                  << "interpreted.\n"
                  << log;
      }
    } else {
      ++stats_.failed;
    }
    std::remove(src.c_str());
    std::remove(tmp.c_str());
    k.done = true;
  }

  struct Counters {
    std::atomic<int64_t> built{0}, from_disk{0}, memory_hits{0}, interpreted{0}, failed{0};
  };

  std::atomic<bool> enabled_;
  const bool sync_, debug_;
  const std::string dir_;
  std::mutex mutex_;
  std::condition_variable cv_, idle_;
  std::unordered_map<std::string, std::shared_ptr<Kernel>> kernels_;
  std::deque<std::shared_ptr<Kernel>> pending_;
  bool worker_started_ = false;
  bool building_ = false;
  Counters stats_;
};

}  // namespace

BlockKernel jit_kernel(const Compiled& c, const std::vector<char>& scalar_inputs,
                       const std::vector<int>& outputs) {
  return Jit::get().lookup(c, scalar_inputs, outputs);
}

}  // namespace mlx::core::cpu

namespace mlx::core::detail {
FusedKernelStats fused_kernel_stats() { return cpu::Jit::get().stats(); }
void wait_for_fused_kernels() { cpu::Jit::get().wait(); }
void set_fused_kernel_generation(bool enabled) { cpu::Jit::get().set_enabled(enabled); }
}  // namespace mlx::core::detail
