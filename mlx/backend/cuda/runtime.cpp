// GPU streams: each maps to a non-blocking CUDA stream. A task only issues work, so a stream
// position is done when a CUDA event recorded after it has completed. Events are recorded
// lazily, when someone asks about a position: one record then covers every task issued so far,
// and a training step pays no event per op.
#include "mlx/backend/cuda/runtime.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/index_errors.h"
#include "mlx/runtime/device_stream.h"

namespace mlx::core {

namespace cu {

namespace {

thread_local CurrentStream tls_current;
thread_local int tls_device = -1;

struct StreamRegistry {
  std::mutex mutex;
  std::vector<GpuStream> by_bit;  // index = bit position
};
StreamRegistry& registry() {
  static auto* r = new StreamRegistry();  // leaked: streams outlive static destruction
  return *r;
}

// Whether the build holds machine code for a GPU of compute capability `sm` (major * 10 +
// minor), judged from CMAKE_CUDA_ARCHITECTURES ("90", "80-real;90", "90a"). Values CMake
// resolves itself ("native", "all") count as yes.
bool built_for(int sm) {
  std::string archs = MLX_CUDA_ARCHITECTURES;
  size_t start = 0;
  while (start <= archs.size()) {
    size_t end = std::min(archs.find(';', start), archs.size());
    std::string entry = archs.substr(start, end - start);
    if (entry.empty() || !std::isdigit(static_cast<unsigned char>(entry[0]))) {
      return true;
    }
    bool virtual_only = entry.find("-virtual") != std::string::npos;
    if (std::atoi(entry.c_str()) == sm && !virtual_only) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

void warn_if_jit_compiled(const cudaDeviceProp& props) {
  int sm = props.major * 10 + props.minor;
  if (!built_for(sm)) {
    std::fprintf(stderr,
                 "[cuda] This build has no machine code for %s (sm_%d; built for %s): the driver "
                 "compiles each kernel module on first use, which can take minutes. Rebuild "
                 "with -DCMAKE_CUDA_ARCHITECTURES=%d.\n",
                 props.name, sm, MLX_CUDA_ARCHITECTURES, sm);
  }
}

}  // namespace

const CurrentStream& current() { return tls_current; }
void set_current(const CurrentStream& s) { tls_current = s; }

cudaStream_t stream() { return tls_current.stream ? tls_current.stream : device(0).transfer; }

void use_device(int index) {
  if (tls_device != index) {
    MLX_CUDA_CHECK(cudaSetDevice(index));
    tls_device = index;
  }
}

int current_device() { return std::max(tls_current.device, 0); }

// A thread that never chose a device is on device 0 (CUDA's default).
DeviceScope::DeviceScope(int index) : previous_(std::max(tls_device, 0)) { use_device(index); }
DeviceScope::~DeviceScope() {
  if (previous_ != tls_device && cudaSetDevice(previous_) == cudaSuccess) {
    tls_device = previous_;
  }
}

DeviceContext& device(int index) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<DeviceContext>> devices;  // leaked on exit with the rest
  std::lock_guard<std::mutex> lock(mutex);
  if (devices.empty()) {
    int n = 0;
    MLX_CUDA_CHECK(cudaGetDeviceCount(&n));
    devices.resize(n);
  }
  if (index < 0 || index >= static_cast<int>(devices.size())) {
    throw std::invalid_argument("[cuda] No GPU with index " + std::to_string(index) + ".");
  }
  if (!devices[index]) {
    auto d = std::make_unique<DeviceContext>();
    d->index = index;
    use_device(index);
    MLX_CUDA_CHECK(cudaGetDeviceProperties(&d->props, index));
    warn_if_jit_compiled(d->props);
    MLX_CUDA_CHECK(cudaStreamCreateWithFlags(&d->transfer, cudaStreamNonBlocking));
    size_t free_bytes = 0;
    MLX_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &d->total_memory));
    devices[index] = std::move(d);
  }
  return *devices[index];
}

cublasLtHandle_t DeviceContext::cublaslt() {
  std::call_once(cublaslt_once_, [this] {
    use_device(index);
    MLX_CUDA_CHECK(cublasLtCreate(&cublaslt_));
  });
  return cublaslt_;
}

void* DeviceContext::cublaslt_workspace(cudaStream_t s) {
  std::lock_guard<std::mutex> lock(workspaces_mutex_);
  void*& ws = workspaces_[s];
  if (ws == nullptr) {
    DeviceScope scope(index);
    MLX_CUDA_CHECK(cudaMalloc(&ws, kCublasLtWorkspaceBytes));
  }
  return ws;
}

GpuStream stream_of_bit(uint64_t bit) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  int pos = __builtin_ctzll(bit);
  return pos < static_cast<int>(r.by_bit.size()) ? r.by_bit[pos] : GpuStream{};
}

int num_gpu_streams() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return static_cast<int>(r.by_bit.size());
}

namespace {

class CudaStream : public DeviceStream {
 public:
  explicit CudaStream(const Stream& s) : device_(s.device.index) {
    device(device_);  // initializes the context
    use_device(device_);
    MLX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    // Streams past the 63rd share the last bit: a buffer's users are then over-approximated.
    bit_ = uint64_t(1) << std::min<size_t>(r.by_bit.size(), 63);
    if (r.by_bit.size() < 64) {
      r.by_bit.push_back({stream_, device_});
    }
    if (r.by_bit.size() == 2) {
      // While one stream existed, freed blocks went back to the cache without waiting for its
      // work (allocator.cpp); now that this stream may be handed one, that work must be done.
      // Waited for after registering, so that every such free came before.
      DeviceScope scope(r.by_bit[0].device);
      MLX_CUDA_CHECK(cudaStreamSynchronize(r.by_bit[0].stream));
    }
  }

  void begin_task() override {
    use_device(device_);
    set_current(CurrentStream{stream_, bit_, device_});
  }
  void end_task(uint64_t value) override {
    set_current(CurrentStream{});
    issued_.store(value, std::memory_order_release);
  }

  bool completed(uint64_t value) override {
    cudaEvent_t e = marker(value);
    cudaError_t err = cudaEventQuery(e);
    if (err == cudaErrorNotReady) {
      return false;
    }
    MLX_CUDA_CHECK(err);
    retire(value);
    // A pending or raised index error is raised by the wait that follows, not lost here.
    return !has_index_error(stream_) && !failed(value);
  }

  void wait(uint64_t value) override {
    if (cudaEvent_t e = recorded_marker(value)) {
      MLX_CUDA_CHECK(cudaEventSynchronize(e));
    } else {
      // Nothing recorded covers it: waiting for the whole stream costs one call less than
      // recording an event and waiting for that (what a tiny op's eval pays).
      use_device(device_);
      MLX_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    retire(value);
    raise_errors(value);
  }

  bool wait_on_device(DeviceStream& producer, uint64_t value) override {
    auto* p = dynamic_cast<CudaStream*>(&producer);
    if (p == nullptr) {
      return false;
    }
    MLX_CUDA_CHECK(cudaStreamWaitEvent(stream_, p->marker(value), 0));
    return true;
  }

  // Raises only an index error no wait has raised yet: one raised before went to the thread
  // that waited for its work, and a later synchronize (mx.synchronize() visits every stream,
  // other threads' too) must not raise it again.
  void synchronize() override {
    use_device(device_);
    MLX_CUDA_CHECK(cudaStreamSynchronize(stream_));
    raise_new_errors(issued_.load(std::memory_order_acquire));
  }

 private:
  // Work whose wait raised an index error: the tasks in (after, upto] ran with it, and which of
  // them found the bad index is not known, so every later wait for one of them raises it again
  // (as a failed CPU node fails each time it is evaluated), not only the first.
  struct Failure {
    uint64_t after;
    uint64_t upto;
    std::exception_ptr error;
  };

  std::exception_ptr failure_of(uint64_t value) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& f : failures_) {
      if (value > f.after && value <= f.upto) {
        return f.error;
      }
    }
    return nullptr;
  }
  bool failed(uint64_t value) { return failure_of(value) != nullptr; }

  // After the work up to `value` is done: raises an index error recorded by it (remembering
  // the tasks it fails) or one raised before for it; else notes the work as clean.
  void raise_errors(uint64_t value) {
    if (auto e = failure_of(value)) {
      std::rethrow_exception(e);
    }
    raise_new_errors(value);
  }

  // Raises an index error recorded since the last check (remembering the tasks it fails); else
  // notes the work up to `value` as clean.
  void raise_new_errors(uint64_t value) {
    try {
      raise_index_errors(stream_);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      failures_.push_back(
          Failure{clean_, issued_.load(std::memory_order_acquire), std::current_exception()});
      if (failures_.size() > kMaxFailures) {
        failures_.pop_front();
      }
      throw;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    clean_ = std::max(clean_, value);
  }

  static constexpr size_t kMaxFailures = 16;
  struct Marker {
    uint64_t value;  // every task up to here was issued before the event was recorded
    cudaEvent_t event;
  };

  // The earliest recorded event that covers the tasks up to `value`, or null. Holds mutex_.
  cudaEvent_t find_marker(uint64_t value) const {
    for (auto& m : markers_) {
      if (m.value >= value) {
        return m.event;
      }
    }
    return nullptr;
  }

  cudaEvent_t recorded_marker(uint64_t value) {
    std::lock_guard<std::mutex> lock(mutex_);
    return find_marker(value);
  }

  // An event recorded after the work of the tasks up to `value` (the host part of which has
  // run): the earliest recorded one that covers it, or a new one covering all issued work.
  cudaEvent_t marker(uint64_t value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cudaEvent_t e = find_marker(value)) {
      return e;
    }
    cudaEvent_t e;
    if (free_events_.empty()) {
      use_device(device_);
      MLX_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    } else {
      e = free_events_.back();
      free_events_.pop_back();
    }
    MLX_CUDA_CHECK(cudaEventRecord(e, stream_));
    markers_.push_back(Marker{issued_.load(std::memory_order_acquire), e});
    return e;
  }

  // Markers before a completed position are not needed any more.
  void retire(uint64_t value) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (markers_.size() > 1 && markers_[1].value <= value) {
      free_events_.push_back(markers_.front().event);
      markers_.pop_front();
    }
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  uint64_t bit_ = 0;
  std::atomic<uint64_t> issued_{0};  // tasks whose host part has run
  std::mutex mutex_;
  std::deque<Marker> markers_;
  std::vector<cudaEvent_t> free_events_;
  uint64_t clean_ = 0;  // the tasks up to here finished without an index error
  std::deque<Failure> failures_;
};

}  // namespace

}  // namespace cu

std::unique_ptr<DeviceStream> make_gpu_stream(const Stream& s) {
  return std::make_unique<cu::CudaStream>(s);
}

}  // namespace mlx::core
