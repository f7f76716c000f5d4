#include "mlx/runtime/stream.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "mlx/runtime/scheduler.h"

namespace mlx::core {

namespace {

// Default streams are per thread, so threads that each run their own work run it in parallel
// (a stream runs its tasks one at a time). The first thread to ask gets the first stream; a
// thread that ends gives its streams back for the next new thread to reuse (a program that
// starts a thread per task must not pile up streams and their device resources).
struct DefaultStreamPool {
  std::mutex mutex;
  std::vector<Stream> free;

  Stream take(Device d) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto it = free.begin(); it != free.end(); ++it) {
        if (it->device == d) {
          Stream s = *it;
          free.erase(it);
          return s;
        }
      }
    }
    return scheduler::new_stream(d);
  }
  void give_back(const Stream& s) {
    std::lock_guard<std::mutex> lock(mutex);
    free.push_back(s);
  }
};

DefaultStreamPool& pool() {
  static auto* p = new DefaultStreamPool();  // leaked: threads end during static destruction
  return *p;
}

// The calling thread's own default streams (taken on first use, given back when it ends).
struct ThreadDefaults {
  std::optional<Stream> cpu, gpu;
  ~ThreadDefaults() {
    for (auto* s : {&cpu, &gpu}) {
      if (*s) {
        pool().give_back(**s);
      }
    }
  }
};
thread_local ThreadDefaults tls_defaults;

Stream thread_default_stream(Device d) {
  if (d.type == Device::gpu && !is_available(d)) {
    throw std::invalid_argument("[default_stream] No GPU is available.");
  }
  auto& mine = d.type == Device::cpu ? tls_defaults.cpu : tls_defaults.gpu;
  if (!mine) {
    mine = pool().take(Device(d.type));
  }
  return *mine;
}

thread_local std::optional<Stream> tls_cpu_stream;
thread_local std::optional<Stream> tls_gpu_stream;

}  // namespace

std::ostream& operator<<(std::ostream& os, const Stream& s) {
  return os << "Stream(" << s.device << ", " << s.index << ")";
}

Stream default_stream(Device d) {
  auto& tls = d.type == Device::cpu ? tls_cpu_stream : tls_gpu_stream;
  if (tls) {
    return *tls;
  }
  return thread_default_stream(d);
}

void set_default_stream(Stream s) {
  (s.device.type == Device::cpu ? tls_cpu_stream : tls_gpu_stream) = s;
}

Stream new_stream(Device d) {
  if (!is_available(d)) {
    throw std::invalid_argument("[new_stream] Device is not available.");
  }
  return scheduler::new_stream(d);
}

ThreadLocalStream new_thread_local_stream(Device d) {
  if (!is_available(d)) {
    throw std::invalid_argument("[new_thread_local_stream] Device is not available.");
  }
  static std::atomic<uint64_t> next_id{0};
  return ThreadLocalStream{d, next_id++};
}

Stream stream_from_thread_local_stream(const ThreadLocalStream& s) {
  // Thread-local storage: a new thread never inherits the stream of one that ended.
  thread_local std::unordered_map<uint64_t, Stream> streams;
  auto it = streams.find(s.id);
  if (it == streams.end()) {
    it = streams.emplace(s.id, scheduler::new_stream(s.device)).first;
  }
  return it->second;
}

void synchronize(Stream s) { scheduler::synchronize(s); }
void synchronize() { scheduler::synchronize_all(); }

Stream to_stream(StreamOrDevice s) { return to_stream(s, default_device()); }

Stream to_stream(StreamOrDevice s, Device default_) {
  if (std::holds_alternative<Stream>(s)) {
    return std::get<Stream>(s);
  }
  if (std::holds_alternative<Device>(s)) {
    return default_stream(std::get<Device>(s));
  }
  return default_stream(default_);
}

}  // namespace mlx::core
