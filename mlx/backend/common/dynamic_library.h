// A shared library opened at run time (the MPI and NCCL backends, cuDNN and the CUDA toolkit's
// libraries for the CUDA backend, the BLAS probe of the CPU GEMM policy), and its symbols:
// what is missing is recorded in `error`, never a crash.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "mlx/utils.h"

namespace mlx::core {

struct DynamicLibrary {
  void* handle = nullptr;
  std::string error;  // the first failure, empty when every lookup succeeded

  // Opens the library named by the environment variable `env` when set (env may be null),
  // else the first of `names` that loads.
  DynamicLibrary(const char* env, std::vector<std::string> names, int flags) {
    if (const char* n = env ? std::getenv(env) : nullptr; n != nullptr && *n != '\0') {
      names = {n};
    }
    for (auto& n : names) {
      handle = dlopen(n.c_str(), flags);
      if (handle != nullptr) {
        error.clear();  // an earlier name's failure does not count once one loads
        return;
      }
      error = msg("cannot load ", n, ": ", dlerror());
    }
  }
  bool ok() const { return handle != nullptr && error.empty(); }

  // f = the symbol `name` (null, and `error` set, when missing).
  template <typename F>
  void sym(F& f, const char* name) {
    f = handle ? reinterpret_cast<F>(dlsym(handle, name)) : nullptr;
    if (f == nullptr && error.empty())
      error = msg("symbol ", name, " is missing");
  }
  void* address(const char* name) const { return handle ? dlsym(handle, name) : nullptr; }
};

}  // namespace mlx::core
