// Device memory: a CachingAllocator over cudaMalloc per GPU (the same cache, limits,
// statistics and logs as the host's), and the copies that move a buffer between host and GPU.
//
// Reuse is safe without waiting while one GPU stream exists: a block freed by the host is
// reused by work issued later on the same CUDA stream. With several GPU streams, a freed block
// waits (as a pending free) until events recorded on the streams that used it complete.
#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
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

void cuda_free(void* block, size_t) { cudaFree(block); }

void cuda_synchronize() { cudaDeviceSynchronize(); }

CachingAllocator& gpu_allocator() {
  // Leaked on purpose, like the host allocator: arrays may be freed after main returns.
  static auto* alloc = [] {
    size_t limit = cu::device(0).total_memory;
    return new CachingAllocator(SystemMemory{"cuda", cuda_malloc, cuda_free, cuda_synchronize},
                                limit);
  }();
  return *alloc;
}

struct PendingFree {
  Buffer block;
  std::vector<cudaEvent_t> events;
};

struct PendingFrees {
  std::mutex mutex;
  std::deque<PendingFree> list;
};
PendingFrees& pending() {
  static auto* p = new PendingFrees();
  return *p;
}

// Returns to the cache the pending blocks whose users have finished with them.
void release_finished() {
  auto& p = pending();
  std::vector<Buffer> done;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    for (auto it = p.list.begin(); it != p.list.end();) {
      bool finished = true;
      for (auto e : it->events) {
        finished = finished && cudaEventQuery(e) == cudaSuccess;
      }
      if (finished) {
        for (auto e : it->events) {
          cudaEventDestroy(e);
        }
        done.push_back(it->block);
        it = p.list.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& b : done) {
    gpu_allocator().free(b);
  }
}

}  // namespace

Buffer gpu_malloc(size_t nbytes) {
  release_finished();
  cu::use_device(0);
  return gpu_allocator().malloc(nbytes);
}

void gpu_free(Buffer block, uint64_t streams) {
  if (!block) {
    return;
  }
  if (cu::num_gpu_streams() <= 1) {
    gpu_allocator().free(block);
    return;
  }
  PendingFree p{block, {}};
  for (uint64_t rest = streams; rest; rest &= rest - 1) {
    cudaStream_t s = cu::stream_of_bit(rest & -rest);
    cudaEvent_t e;
    if (s == nullptr || cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
      continue;
    }
    cudaEventRecord(e, s);
    p.events.push_back(e);
  }
  {
    auto& list = pending();
    std::lock_guard<std::mutex> lock(list.mutex);
    list.list.push_back(std::move(p));
  }
  release_finished();
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

void init_gpu_allocator() {
  if (gpu::is_available()) {
    gpu_allocator();
  }
}

}  // namespace mlx::core::allocator
