#include "mlx/runtime/stream.h"

#include <atomic>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "mlx/runtime/scheduler.h"

namespace mlx::core {

namespace {

// One process-wide default stream per device type, created on first use.
Stream global_default_stream(Device d) {
  static Stream cpu_stream = scheduler::new_stream(Device(Device::cpu));
  if (d.type == Device::cpu) {
    return cpu_stream;
  }
  if (!is_available(d)) {
    throw std::invalid_argument("[default_stream] No GPU is available.");
  }
  static Stream gpu_stream = scheduler::new_stream(Device(Device::gpu));
  return gpu_stream;
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
  return global_default_stream(d);
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
