#include "mlx/backend/cuda/nvrtc.h"

#ifdef MLX_CUDA_HAS_NVRTC
#include <nvrtc.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <functional>
#include <memory>
#endif

namespace mlx::core::cu {

#ifdef MLX_CUDA_HAS_NVRTC
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Where libcu++ (cuda/std/...) is for the toolkit headers in `include`: include/cccl since
// CUDA 13, include itself before, a wheel of its own (nvidia/cuda_cccl) in the CUDA 12 pip
// layout; "" when it is not there.
std::string libcudacxx_of(const std::string& include) {
  for (auto d : {include + "/cccl", include, include + "/../../cuda_cccl/include"}) {
    if (exists(d + "/cuda/std/complex")) {
      return d;
    }
  }
  return "";
}

const std::vector<std::string>& include_options() {
  static const std::vector<std::string> opts = [] {
    const std::string& dir = nvrtc_toolkit_include();
    if (dir.empty()) {
      return std::vector<std::string>();
    }
    return std::vector<std::string>{"-I" + dir, "-I" + libcudacxx_of(dir)};
  }();
  return opts;
}

}  // namespace

const std::string& nvrtc_toolkit_include() {
  static const std::string dir = [] {
    const std::string nvrtc = nvrtc_library_file();
    if (nvrtc.empty()) {
      return std::string();  // nothing to compile with
    }
    // .../lib/libnvrtc.so: the toolkit's include/, or the pip layouts' nvidia/cu13/include
    // and (CUDA 12) nvidia/cuda_runtime/include beside nvidia/cuda_nvrtc/lib.
    const std::string lib = parent(nvrtc);
    std::vector<std::string> candidates = {lib + "/../include",
                                           lib + "/../../cuda_runtime/include"};
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
      if (const char* v = std::getenv(var)) {
        candidates.push_back(std::string(v) + "/include");
      }
    }
    candidates.push_back(MLX_CUDA_TOOLKIT_INCLUDE);
    candidates.push_back("/usr/local/cuda/include");
    for (auto& c : candidates) {
      char real[PATH_MAX];
      if (exists(c + "/cuda_fp16.h") && !libcudacxx_of(c).empty() && ::realpath(c.c_str(), real)) {
        return std::string(real);
      }
    }
    return std::string();
  }();
  return dir;
}

const std::string& nvrtc_fingerprint() {
  static const std::string f = [] {
    int major = 0, minor = 0;
    if (!nvrtc_library_file().empty()) {
      nvrtcVersion(&major, &minor);
    }
    std::string headers;
    for (auto& h : embedded_headers()) {
      headers += h.name;
      headers += h.text;
    }
    return "nvrtc " + std::to_string(major) + "." + std::to_string(minor) + ", headers " +
           std::to_string(std::hash<std::string>{}(headers)) + ", toolkit " +
           nvrtc_toolkit_include();
  }();
  return f;
}

NvrtcResult nvrtc_compile(const std::string& source, const std::string& file, int arch,
                          const std::vector<std::string>& options,
                          const std::vector<std::string>& name_expressions) {
  NvrtcResult r;
  auto failed = [&](nvrtcResult rc, const char* call) {
    if (rc != NVRTC_SUCCESS && r.error.empty()) {
      r.error = std::string(call) + ": " + nvrtcGetErrorString(rc);
    }
    return rc != NVRTC_SUCCESS;
  };
  std::vector<const char*> header_texts, header_names;
  for (auto& h : embedded_headers()) {
    header_names.push_back(h.name);
    header_texts.push_back(h.text);
  }
  nvrtcProgram prog = nullptr;
  if (failed(nvrtcCreateProgram(&prog, source.c_str(), file.c_str(),
                                static_cast<int>(header_texts.size()), header_texts.data(),
                                header_names.data()),
             "nvrtcCreateProgram")) {
    return r;
  }
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> owner(
      &prog, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  for (auto& e : name_expressions) {
    if (failed(nvrtcAddNameExpression(prog, e.c_str()), "nvrtcAddNameExpression")) {
      return r;
    }
  }
  std::vector<std::string> opts = options;
  opts.push_back("--gpu-architecture=sm_" + std::to_string(arch));
  opts.insert(opts.end(), include_options().begin(), include_options().end());
  std::vector<const char*> argv;
  for (auto& o : opts) {
    argv.push_back(o.c_str());
  }
  if (nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data()) != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    r.error = log.c_str();
    if (include_options().empty()) {
      r.error += "(no CUDA toolkit headers found: set CUDA_HOME)\n";
    }
    return r;
  }
  for (auto& e : name_expressions) {
    const char* lowered = nullptr;
    if (failed(nvrtcGetLoweredName(prog, e.c_str(), &lowered), "nvrtcGetLoweredName")) {
      return r;
    }
    r.lowered.push_back(lowered);
  }
  size_t size = 0;
  std::string cubin;
  if (failed(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize")) {
    return r;
  }
  cubin.resize(size);
  if (failed(nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN")) {
    return r;
  }
  r.cubin = std::move(cubin);
  return r;
}

#else

NvrtcResult nvrtc_compile(const std::string&, const std::string&, int,
                          const std::vector<std::string>&, const std::vector<std::string>&) {
  return {{}, {}, "this build's CUDA toolkit has no NVRTC"};
}

const std::string& nvrtc_toolkit_include() {
  static const std::string none;
  return none;
}

const std::string& nvrtc_fingerprint() { return nvrtc_toolkit_include(); }

#endif

}  // namespace mlx::core::cu
