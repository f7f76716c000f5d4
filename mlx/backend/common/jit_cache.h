// Kernels generated at run time and built by a toolchain (the CPU's: the system C++ compiler run
// as a command; the GPU's: NVRTC in process): built on a background thread, at the lowest
// priority, while the caller runs the region another way (an interpreter, op by op), cached in
// memory by key and on disk by source (MLX_KERNEL_CACHE, else ~/.cache/mlx-linux/kernels).
// MLX_COMPILE_JIT=sync builds before the first run, =0 never; MLX_COMPILE_DEBUG=1 prints each
// source it builds and how long the build took.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "mlx/primitives/compiled.h"

namespace mlx::core {

class JitCache {
 public:
  // Builds a whole source (prelude included) into the artifact file `out`: nullopt, or why it
  // failed (the compiler's log).
  using Build =
      std::function<std::optional<std::string>(const std::string& source, const std::string& out)>;

  struct Toolchain {
    std::string label;            // "cpu", "cuda": for messages
    std::string prelude;          // starts every source; part of each kernel's disk key
    std::string artifact_suffix;  // ".so", ".cubin"
    Build build;
    // The entry point `name` of a built artifact (a function pointer, a CUfunction), or null.
    std::function<void*(const std::string& path, const std::string& name)> load;
    bool available = true;  // false: the toolchain is missing here (never generate)
    // Lookups of a key before its build starts (MLX_COMPILE_JIT=sync: always the first); more
    // than 1 spares a slow compiler the regions a program runs only once.
    int uses_before_build = 1;
  };

  // A Build that writes the source to a file with `source_suffix` beside `out` and runs the
  // shell command `command(source file, out)`.
  static Build command_build(
      std::string source_suffix,
      std::function<std::string(const std::string& src, const std::string& out)> command);

  explicit JitCache(Toolchain toolchain);

  // The kernel for `key` once built; null while it is being built, when make_source says the
  // region has no generated form (nullopt), when generation is off, or when the build failed.
  // make_source(name) writes a kernel whose entry point is `name`; it runs once per key.
  void* lookup(const std::string& key,
               const std::function<std::optional<std::string>(const std::string&)>& make_source);

  void wait();  // until no kernel is pending
  // A built kernel that could not run: counted as a failure, and generation stops (the caller
  // runs its regions the other way from now on).
  void report_unusable(const std::string& why);
  void set_enabled(bool on) { enabled_ = on && toolchain_.available; }
  detail::FusedKernelStats stats() const;

  // Every cache of the process (the host's, the GPU's): the public stats sum them.
  static std::vector<JitCache*> all();

 private:
  struct Kernel {
    std::atomic<void*> fn{nullptr};
    std::atomic<bool> done{false};
    std::string name, source;
    int uses = 0;  // lookups so far (under the cache's mutex)
  };
  // Hands k to the builder thread; called under mutex_.
  void queue_build_locked(const std::shared_ptr<Kernel>& k);
  struct Counters {
    std::atomic<int64_t> built{0}, from_disk{0}, memory_hits{0}, interpreted{0}, failed{0};
  };

  std::string path_of(const Kernel& k) const;
  bool open(Kernel& k, const std::string& artifact);
  void start_worker();
  void run();
  void stop_building();  // at exit: drops queued builds, waits for the running one
  void build(Kernel& k);

  Toolchain toolchain_;
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

}  // namespace mlx::core
