// Allocator that wraps a backend's system malloc/free with the shared buffer cache,
// limits, statistics and debug logging. A backend supplies only the two system calls.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlx/memory/allocator.h"
#include "mlx/memory/buffer_cache.h"
#include "mlx/memory/memory.h"

namespace mlx::core::allocator {

struct SystemMemory {
  const char* name;              // "cpu", "cuda", ... for messages
  void* (*malloc)(size_t size);  // nullptr on failure, never throws
  void (*free)(void* block, size_t size);
  // Waits for pending device work before a retry after a failed malloc (may be null).
  void (*synchronize)() = nullptr;
};

class CachingAllocator : public Allocator {
 public:
  CachingAllocator(SystemMemory system, size_t memory_limit);
  ~CachingAllocator() override;

  Buffer malloc(size_t size) override;
  void free(Buffer buffer) override;
  size_t size(Buffer buffer) const override;

  size_t set_memory_limit(size_t limit);
  size_t set_cache_limit(size_t limit);
  void clear_cache();
  void reset_peak();
  void reset_stats();
  MemoryStats stats() const;

  // Size of the block actually handed out for a request of `size` bytes.
  static size_t round_size(size_t size);

  // Every caching allocator of the process (the host's and one per GPU), for the public
  // memory API, which reports and steers them together.
  static std::vector<CachingAllocator*> all();

 private:
  void* system_malloc_locked(size_t size);
  void trim_cache_locked(size_t keep_at_most);

  SystemMemory system_;
  mutable std::mutex mutex_;
  BufferCache cache_;
  struct Block {
    size_t size;
    size_t requested;
  };
  std::unordered_map<void*, Block> live_;
  MemoryStats stats_;
  bool memory_debug_ = false;
  bool cache_debug_ = false;
};

}  // namespace mlx::core::allocator
