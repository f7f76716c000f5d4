#include "mlx/backend/common/jit_cache.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

namespace mlx::core {

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

struct Registry {
  std::mutex mutex;
  std::vector<JitCache*> caches;
  // The last set_fused_kernel_generation, for caches made after it (the GPU's, at first use).
  std::optional<bool> generation;
};
Registry& registry() {
  static auto* r = new Registry();  // leaked, as the caches
  return *r;
}

}  // namespace

JitCache::JitCache(Toolchain toolchain)
    : toolchain_(std::move(toolchain)),
      enabled_(!env_is("MLX_COMPILE_JIT", "0") && toolchain_.available),
      sync_(env_is("MLX_COMPILE_JIT", "sync")),
      debug_(std::getenv("MLX_COMPILE_DEBUG") && !env_is("MLX_COMPILE_DEBUG", "0")),
      dir_(cache_dir()) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.caches.push_back(this);
  if (r.generation) {
    set_enabled(*r.generation);
  }
}

std::vector<JitCache*> JitCache::all() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.caches;
}

void* JitCache::lookup(
    const std::string& key,
    const std::function<std::optional<std::string>(const std::string&)>& make_source) {
  if (!enabled_.load(std::memory_order_relaxed)) {
    return nullptr;
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
      auto src = make_source(k->name);
      kernels_[key] = k;
      if (!src) {
        k->done = true;
        return nullptr;
      }
      k->source = *src;
    }
    // The disk cache is asked at the first use; the compiler only at the use that starts it.
    if (!k->done && ++k->uses == 1 && open(*k, path_of(*k))) {
      ++stats_.from_disk;
    } else if (!k->done && k->uses == (sync_ ? 1 : toolchain_.uses_before_build)) {
      queue_build_locked(k);
    }
  }
  if (sync_ && !k->done) {
    wait();
  }
  void* fn = k->fn.load();
  if (fn) {
    ++stats_.memory_hits;
  } else {
    ++stats_.interpreted;
  }
  return fn;
}

void JitCache::queue_build_locked(const std::shared_ptr<Kernel>& k) {
  pending_.push_back(k);
  start_worker();
  cv_.notify_one();
}

void JitCache::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return pending_.empty() && !building_; });
}

void JitCache::report_unusable(const std::string& why) {
  ++stats_.failed;
  if (enabled_.exchange(false)) {
    std::cerr << "[compile] a generated " << toolchain_.label << " kernel could not run (" << why
              << "); fused regions run op by op from now on.\n";
  }
}

detail::FusedKernelStats JitCache::stats() const {
  return {stats_.built.load(), stats_.from_disk.load(), stats_.memory_hits.load(),
          stats_.interpreted.load(), stats_.failed.load()};
}

std::string JitCache::path_of(const Kernel& k) const {
  return dir_ + "/" + hex(std::hash<std::string>{}(toolchain_.prelude + k.source)) +
         toolchain_.artifact_suffix;
}

bool JitCache::open(Kernel& k, const std::string& artifact) {
  struct stat st;
  if (::stat(artifact.c_str(), &st) != 0) {
    return false;
  }
  void* fn = toolchain_.load(artifact, k.name);
  if (!fn) {
    return false;
  }
  k.fn = fn;
  k.done = true;
  return true;
}

void JitCache::start_worker() {
  if (worker_started_) {
    return;
  }
  worker_started_ = true;
  // A build still running when the process exits races the toolchain's own teardown (NVRTC
  // and the CUDA runtime unloading under it: a segfault after a short program's last line).
  // Registered after the runtime's own exit handlers, so it runs before them.
  static const bool stops_at_exit = (std::atexit([] {
                                       for (JitCache* c : all()) {
                                         c->stop_building();
                                       }
                                     }),
                                     true);
  (void)stops_at_exit;
  std::thread([this] { run(); }).detach();
}

void JitCache::stop_building() {
  enabled_ = false;
  std::unique_lock<std::mutex> lock(mutex_);
  pending_.clear();
  idle_.wait(lock, [&] { return !building_; });
}

// Builds pending kernels one file each (a file per kernel keeps the disk cache per kernel).
void JitCache::run() {
  // At the lowest priority (a compiler it starts inherits it): the builds must not slow down
  // the work they are for.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
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

JitCache::Build JitCache::command_build(
    std::string source_suffix,
    std::function<std::string(const std::string& src, const std::string& out)> command) {
  return [suffix = std::move(source_suffix), command = std::move(command)](
             const std::string& source, const std::string& out) -> std::optional<std::string> {
    const std::string src = out + suffix;
    {
      std::ofstream f(src);
      f << source;
    }
    // A compiler that did not start, or whose end was not seen (a fork that failed under load,
    // a signal), is tried again; one that ran and failed is not.
    std::optional<std::string> error;
    for (int attempt = 0; attempt < 3; ++attempt) {
      FILE* p = ::popen((command(src, out) + " 2>&1").c_str(), "r");
      if (p == nullptr) {
        error = std::string("the compiler could not be started: ") + std::strerror(errno) + "\n";
        continue;
      }
      std::string log;
      char buf[512];
      while (std::fgets(buf, sizeof(buf), p)) {
        log += buf;
      }
      const int status = ::pclose(p);
      if (status == -1) {
        error = log + "the compiler's exit status was lost: " + std::strerror(errno) + "\n";
      } else if (WIFSIGNALED(status)) {
        error =
            log + "the compiler was killed by signal " + std::to_string(WTERMSIG(status)) + "\n";
      } else {
        const int code = WEXITSTATUS(status);
        if (code == 0) {
          error.reset();
        } else {
          error =
              log.empty() ? "the compiler exited with status " + std::to_string(code) + "\n" : log;
        }
        break;
      }
    }
    std::remove(src.c_str());
    return error;
  };
}

void JitCache::build(Kernel& k) {
  make_dirs(dir_);
  const std::string artifact = path_of(k);
  const std::string tmp = artifact + "." + std::to_string(::getpid()) + ".tmp";
  if (debug_) {
    std::cerr << "[compile] building " << toolchain_.label << " kernel " << k.name << ":\n"
              << k.source;
  }
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::string> error = toolchain_.build(toolchain_.prelude + k.source, tmp);
  if (!error && std::rename(tmp.c_str(), artifact.c_str()) != 0) {
    error = "cannot rename " + tmp + "\n";
  }
  if (!error && !open(k, artifact)) {
    error = "cannot load " + artifact + "\n";
  }
  if (error) {
    ++stats_.failed;
    std::cerr << "[compile] building fused " << toolchain_.label << " kernel " << k.name
              << " failed; it runs op by op.\n"
              << *error;
  } else {
    ++stats_.built;
    if (debug_) {
      std::cerr << "[compile] built " << toolchain_.label << " kernel " << k.name << " in "
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                << " s\n";
    }
  }
  std::remove(tmp.c_str());
  k.done = true;
}

}  // namespace mlx::core

namespace mlx::core::detail {

FusedKernelStats fused_kernel_stats() {
  FusedKernelStats total;
  for (auto* c : JitCache::all()) {
    FusedKernelStats s = c->stats();
    total.built += s.built;
    total.from_disk += s.from_disk;
    total.memory_hits += s.memory_hits;
    total.interpreted += s.interpreted;
    total.failed += s.failed;
  }
  return total;
}

void wait_for_fused_kernels() {
  for (auto* c : JitCache::all()) {
    c->wait();
  }
}

void set_fused_kernel_generation(bool enabled) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.generation = enabled;
  for (auto* c : r.caches) {
    c->set_enabled(enabled);
  }
}

}  // namespace mlx::core::detail
