// Device memory: a CachingAllocator over cudaMalloc per GPU ("cuda:0", "cuda:1", ...: the same
// cache, limits, statistics and logs as the host's), and the copies that move a buffer between
// host and GPU.
//
// Reuse is safe without waiting while one GPU stream exists: a block freed by the host is
// reused by work issued later on the same CUDA stream (making a second stream waits for the
// first one's work, runtime.cpp). With several GPU streams, a freed block waits (as a pending
// free) until events recorded on the streams that used it complete.
#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mlx/backend/common/gpu_info.h"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/runtime.h"
#include "mlx/memory/caching_allocator.h"
#include "mlx/memory/residency.h"

namespace mlx::core::allocator {

namespace {

void* cuda_malloc(size_t size) {
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, size);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // out of memory is not sticky: clear it and let the allocator decide
    return nullptr;
  }
  // Anything else (a kernel fault left on the context, say) is not a memory shortage: say what
  // it is instead of reporting out of memory.
  cu::check(err, "cudaMalloc");
  return p;
}

// The system calls of one GPU: each runs with that GPU current, whichever thread frees.
SystemMemory cuda_memory(int device, const char* name) {
  return SystemMemory{name,
                      [device](size_t size) {
                        cu::DeviceScope scope(device);
                        return cuda_malloc(size);
                      },
                      [device](void* block, size_t) {
                        cu::DeviceScope scope(device);
                        cudaFree(block);
                      },
                      [device] {
                        cu::DeviceScope scope(device);
                        cudaDeviceSynchronize();
                      }};
}

// One allocator per GPU, all made at once: the device properties need no CUDA context, so a
// process that uses one GPU creates none on the others, and limits or policies set before a
// GPU's first allocation apply to it too. Leaked on purpose, like the host allocator: arrays
// may be freed after main returns.
const std::vector<CachingAllocator*>& gpu_allocators() {
  static auto* all = [] {
    auto* v = new std::vector<CachingAllocator*>();
    for (int d = 0; d < gpu::device_count(); ++d) {
      cudaDeviceProp props;
      MLX_CUDA_CHECK(cudaGetDeviceProperties(&props, d));
      auto* name = new std::string("cuda:" + std::to_string(d));
      v->push_back(new CachingAllocator(cuda_memory(d, name->c_str()), props.totalGlobalMem));
    }
    return v;
  }();
  return *all;
}

CachingAllocator& gpu_allocator(int device) { return *gpu_allocators().at(device); }

// The GPU whose allocator handed out `block`.
int device_of(const Buffer& block) {
  if (gpu_allocators().size() == 1) {
    return 0;
  }
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, block.ptr()) != cudaSuccess) {
    cudaGetLastError();
    return 0;  // not a device pointer: device 0's allocator reports the unknown block
  }
  return attr.device;
}

// An event recorded on a stream that used a freed block, after that use.
struct Recorded {
  uint64_t stream_bit;
  int device;
  cudaEvent_t event;
};

// A freed block waiting for the work of the streams that used it.
struct PendingFree {
  Buffer block;
  int device;
  std::vector<Recorded> events;
};

struct PendingFrees {
  std::mutex mutex;
  std::deque<PendingFree> list;                        // in the order the blocks were freed
  std::vector<std::vector<cudaEvent_t>> spare_events;  // per device: events to record again
};
PendingFrees& pending() {
  static auto* p = new PendingFrees();
  return *p;
}

// An event of `device` to record (one made before and done with, or a new one); null if none
// could be made. Holds p.mutex.
cudaEvent_t take_event(PendingFrees& p, int device) {
  if (static_cast<int>(p.spare_events.size()) > device && !p.spare_events[device].empty()) {
    cudaEvent_t e = p.spare_events[device].back();
    p.spare_events[device].pop_back();
    return e;
  }
  cu::DeviceScope scope(device);
  cudaEvent_t e;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return e;
}

void give_back_event(PendingFrees& p, const Recorded& r) {
  if (static_cast<int>(p.spare_events.size()) <= r.device) {
    p.spare_events.resize(r.device + 1);
  }
  p.spare_events[r.device].push_back(r.event);
}

}  // namespace

// Events recorded on one stream complete in the order they were recorded, and the list is in
// free order: once a stream's event is found unfinished, the later entries' events on that
// stream are taken as unfinished without asking (at worst a block is released one call later).
// So a call asks about the newly finished entries and one event per busy stream, not about
// every pending block.
void release_finished_gpu_frees() {
  auto& p = pending();
  std::vector<PendingFree> done;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    uint64_t busy = 0;  // streams with an unfinished event
    size_t kept = 0;
    for (size_t i = 0; i < p.list.size(); ++i) {
      PendingFree& f = p.list[i];
      bool finished = true;
      for (const Recorded& r : f.events) {
        if ((busy & r.stream_bit) || cudaEventQuery(r.event) != cudaSuccess) {
          busy |= r.stream_bit;
          finished = false;
          break;
        }
      }
      if (finished) {
        for (const Recorded& r : f.events) {
          give_back_event(p, r);
        }
        done.push_back(std::move(f));
      } else {
        if (kept != i) {
          p.list[kept] = std::move(f);
        }
        ++kept;
      }
    }
    p.list.erase(p.list.begin() + static_cast<std::ptrdiff_t>(kept), p.list.end());
  }
  for (auto& f : done) {
    gpu_allocator(f.device).free(f.block);
  }
}

Buffer gpu_malloc(size_t nbytes) {
  release_finished_gpu_frees();
  return gpu_allocator(cu::current_device()).malloc(nbytes);
}

void gpu_free(Buffer block, uint64_t streams) {
  if (!block) {
    return;
  }
  const int device = device_of(block);
  if (cu::num_gpu_streams() <= 1) {
    gpu_allocator(device).free(block);
    return;
  }
  PendingFree f{block, device, {}};
  auto& p = pending();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    for (uint64_t rest = streams; rest; rest &= rest - 1) {
      const uint64_t bit = rest & -rest;
      const cu::GpuStream s = cu::stream_of_bit(bit);
      if (s.stream == nullptr) {
        continue;
      }
      if (cudaEvent_t e = take_event(p, s.device)) {
        cu::DeviceScope scope(s.device);  // an event is recorded on a stream of its own device
        cudaEventRecord(e, s.stream);
        f.events.push_back(Recorded{bit, s.device, e});
      }
    }
    p.list.push_back(std::move(f));
  }
  release_finished_gpu_frees();
}

namespace {

// Large transfers go through a ring of pinned host buffers, so that the DMA of one chunk
// overlaps the host's copy of the next (pageable memory would make the driver stage it, one
// synchronous piece at a time). A buffer is refilled once the event of its last DMA completed.
class Staging {
 public:
  static constexpr size_t kChunk = size_t(4) << 20;
  static constexpr int kBuffers = 4;
  static constexpr size_t kMinBytes = size_t(1) << 20;  // smaller copies go direct

  // The ring of the calling thread's device, or null when pinned memory is not available.
  static Staging* get() {
    static std::mutex mutex;
    static auto* rings = new std::vector<std::unique_ptr<Staging>>();  // leaked, as devices
    const int device = std::max(cu::current().device, 0);
    std::lock_guard<std::mutex> lock(mutex);
    if (rings->size() <= static_cast<size_t>(device)) {
      rings->resize(device + 1);
    }
    auto& r = (*rings)[device];
    if (!r) {
      r = std::make_unique<Staging>();
    }
    return r->ok_ ? r.get() : nullptr;
  }

  Staging() {
    for (int i = 0; i < kBuffers; ++i) {
      if (cudaHostAlloc(&buffers_[i], kChunk, cudaHostAllocPortable) != cudaSuccess ||
          cudaEventCreateWithFlags(&events_[i], cudaEventDisableTiming) != cudaSuccess) {
        cudaGetLastError();
        ok_ = false;
        return;
      }
    }
  }

  // Enqueues dst <- src on s and returns true once src has been read (src may then change);
  // false, doing nothing, while another stream's transfer still holds a buffer (never waits
  // for other streams' work).
  bool to_device(char* dst, const char* src, size_t nbytes, cudaStream_t s) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle()) {
      return false;
    }
    for (size_t off = 0; off < nbytes; off += kChunk) {
      const size_t n = std::min(kChunk, nbytes - off);
      const int b = next_++ % kBuffers;
      MLX_CUDA_CHECK(cudaEventSynchronize(events_[b]));  // its previous DMA is done
      std::memcpy(buffers_[b], src + off, n);
      MLX_CUDA_CHECK(cudaMemcpyAsync(dst + off, buffers_[b], n, cudaMemcpyHostToDevice, s));
      MLX_CUDA_CHECK(cudaEventRecord(events_[b], s));
    }
    return true;
  }

  // dst <- src after the work enqueued on s; returns true with dst filled, or false as
  // to_device does.
  bool to_host(char* dst, const char* src, size_t nbytes, cudaStream_t s) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle()) {
      return false;
    }
    const size_t chunks = (nbytes + kChunk - 1) / kChunk;
    auto issue = [&](size_t c) {
      const int b = static_cast<int>((next_ + c) % kBuffers);
      MLX_CUDA_CHECK(cudaEventSynchronize(events_[b]));
      MLX_CUDA_CHECK(cudaMemcpyAsync(buffers_[b], src + c * kChunk,
                                     std::min(kChunk, nbytes - c * kChunk), cudaMemcpyDeviceToHost,
                                     s));
      MLX_CUDA_CHECK(cudaEventRecord(events_[b], s));
    };
    // Keep kBuffers - 1 chunks in flight while the host copies out the oldest.
    for (size_t c = 0; c < std::min<size_t>(chunks, kBuffers - 1); ++c) {
      issue(c);
    }
    for (size_t c = 0; c < chunks; ++c) {
      const int b = static_cast<int>((next_ + c) % kBuffers);
      MLX_CUDA_CHECK(cudaEventSynchronize(events_[b]));
      std::memcpy(dst + c * kChunk, buffers_[b], std::min(kChunk, nbytes - c * kChunk));
      if (c + kBuffers - 1 < chunks) {
        issue(c + kBuffers - 1);
      }
    }
    next_ += chunks;
    return true;
  }

 private:
  bool idle() {
    for (auto e : events_) {
      if (cudaEventQuery(e) != cudaSuccess) {
        cudaGetLastError();  // cudaErrorNotReady is not an error
        return false;
      }
    }
    return true;
  }

  std::mutex mutex_;
  void* buffers_[kBuffers] = {};
  cudaEvent_t events_[kBuffers] = {};
  size_t next_ = 0;
  bool ok_ = true;
};

}  // namespace

void copy_to_host(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) {
    return;
  }
  cudaStream_t s = cu::stream();
  Staging* ring = nbytes >= Staging::kMinBytes ? Staging::get() : nullptr;
  if (ring && ring->to_host(static_cast<char*>(dst), static_cast<const char*>(src), nbytes, s)) {
    return;
  }
  MLX_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, s));
  MLX_CUDA_CHECK(cudaStreamSynchronize(s));
}

void copy_to_device(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) {
    return;
  }
  cudaStream_t s = cu::stream();
  Staging* ring = nbytes >= Staging::kMinBytes ? Staging::get() : nullptr;
  if (!ring ||
      !ring->to_device(static_cast<char*>(dst), static_cast<const char*>(src), nbytes, s)) {
    // From pageable memory the call returns once the source was staged, so the host copy may
    // change or go away afterwards.
    MLX_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, s));
  }
  if (cu::current().stream == nullptr) {
    MLX_CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

uint64_t current_gpu_stream_bit() { return cu::current().bit; }

void init_gpu_allocator() { gpu_allocators(); }

}  // namespace mlx::core::allocator
