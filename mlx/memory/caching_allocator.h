// Allocator that wraps a backend's system malloc/free with the shared buffer cache, the cache
// policy, limits, statistics, tracing and debug logging. A backend supplies only the system
// calls.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlx/memory/allocator.h"
#include "mlx/memory/buffer_cache.h"
#include "mlx/memory/cache_policy.h"
#include "mlx/memory/memory.h"

namespace mlx::core::allocator {

struct SystemMemory {
  // "cpu", "cuda:0", ... for messages and per-device statistics; must outlive the allocator.
  const char* name;
  std::function<void*(size_t size)> malloc;  // nullptr on failure, never throws
  std::function<void(void* block, size_t size)> free;
  // Waits for pending device work before a retry after a failed malloc (may be empty).
  std::function<void()> synchronize = nullptr;
  // Hands memory freed to the system allocator back to the operating system (may be empty).
  std::function<void()> trim = nullptr;
};

// A live block as a snapshot lists it.
struct LiveBlock {
  const void* address;
  size_t size;
  size_t requested;
  const char* op;  // nullptr: made outside evaluation
  uint32_t stack;  // creation stack id (0: none)
  int stream;
  uint64_t serial;  // allocation number within its allocator
};

struct AllocatorSnapshot {
  std::string device;
  std::vector<LiveBlock> live;
  std::vector<std::pair<const void*, size_t>> cached;
  uint64_t next_serial;  // serial of the next allocation
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
  const char* name() const { return system_.name; }
  // The memory the allocator was created for (physical RAM, the device's memory).
  size_t total_memory() const { return total_memory_; }

  // Replaces the policy; a nonzero max_cache becomes the cache limit.
  void set_policy(const CachePolicy& policy);
  CachePolicy policy() const;
  void set_debug(bool memory_debug, bool cache_debug);
  // Returns cached blocks idle for longer than the policy allows to the system; returns the
  // policy's idle_seconds (0: no idle trimming).
  double trim_idle();
  // trim_idle on every allocator; returns the shortest idle_seconds among them (0: none trims).
  static double trim_all_idle();
  AllocatorSnapshot snapshot() const;
  // The adaptive size classes in use (empty unless the policy is adaptive).
  std::vector<size_t> size_classes() const;

  // Size of the block handed out for a request of `size` bytes with the given page size.
  static size_t round_size(size_t size, size_t page = BufferCache::kPage);

  // Every caching allocator of the process (the host's and one per GPU), for the public
  // memory API, which reports and steers them together.
  static std::vector<CachingAllocator*> all();
  // Peaks of the sums over every allocator (of active bytes; of active + cached bytes), kept
  // once there is more than one allocator (keeps_global_sums).
  static bool keeps_global_sums();
  static size_t global_peak_active();
  static size_t global_peak_footprint();
  // Restarts both global peaks from the current sums.
  static void reset_global_peaks();

 private:
  void* system_malloc_locked(size_t size, size_t requested);
  void trim_cache_locked(size_t keep_at_most);
  void trim_idle_locked(uint64_t now);
  void released_to_system_locked(void* block, size_t size);
  void publish_locked();

  SystemMemory system_;
  size_t total_memory_;
  mutable std::mutex mutex_;
  BufferCache cache_;
  struct Block {
    size_t size;
    size_t requested;
    const char* op;
    uint32_t stack;
    int stream;
    uint64_t serial;
  };
  using LiveBlocks = std::unordered_map<void*, Block>;
  LiveBlocks live_;
  // Map nodes of freed blocks, kept for later mallocs (a heap allocation and free per op
  // otherwise); at most kMaxSpareNodes.
  static constexpr size_t kMaxSpareNodes = 64;
  std::vector<LiveBlocks::node_type> spare_nodes_;
  MemoryStats stats_;
  CachePolicy policy_;
  SizeClasses classes_;
  uint64_t idle_ns_ = 0;  // from policy_.idle_seconds
  uint64_t last_idle_check_ = 0;
  uint64_t serial_ = 0;
  size_t published_active_ = 0;  // this allocator's share of the global sums
  size_t published_held_ = 0;
  bool memory_debug_ = false;
  bool cache_debug_ = false;
};

}  // namespace mlx::core::allocator
