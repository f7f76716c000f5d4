// Device memory: a CachingAllocator over cudaMalloc per GPU (the same cache, limits,
// statistics and logs as the host's), and the copies that move a buffer between host and GPU.
//
// Reuse is safe without waiting while one GPU stream exists: a block freed by the host is
// reused by work issued later on the same CUDA stream. With several GPU streams, a freed block
// waits (as a pending free) until events recorded on the streams that used it complete.
#include <deque>
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

void copy_to_host(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) {
    return;
  }
  cudaStream_t s = cu::stream();
  MLX_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, s));
  MLX_CUDA_CHECK(cudaStreamSynchronize(s));
}

void copy_to_device(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) {
    return;
  }
  cudaStream_t s = cu::stream();
  // From pageable memory the call returns once the source was staged, so the host copy may
  // change or go away afterwards.
  MLX_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, s));
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
