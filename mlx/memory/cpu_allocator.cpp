// Host memory: 64-byte aligned blocks from the C library behind the caching allocator.
#include <unistd.h>

#include <cstdlib>

#include "mlx/memory/caching_allocator.h"

namespace mlx::core {

namespace allocator {
namespace {

void* host_malloc(size_t size) { return std::aligned_alloc(64, size); }
void host_free(void* block, size_t) { std::free(block); }

size_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) {
    return size_t(1) << 34;
  }
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
}

CachingAllocator& cpu_allocator() {
  // Leaked on purpose: arrays in static storage may be freed after main returns.
  static auto* alloc =
      new CachingAllocator(SystemMemory{"cpu", host_malloc, host_free}, physical_memory());
  return *alloc;
}

}  // namespace

Allocator& allocator() { return cpu_allocator(); }

}  // namespace allocator

using allocator::cpu_allocator;

size_t get_active_memory() { return cpu_allocator().stats().active_memory; }
size_t get_peak_memory() { return cpu_allocator().stats().peak_memory; }
void reset_peak_memory() { cpu_allocator().reset_peak(); }
size_t get_cache_memory() { return cpu_allocator().stats().cache_memory; }
size_t set_memory_limit(size_t limit) { return cpu_allocator().set_memory_limit(limit); }
size_t get_memory_limit() { return cpu_allocator().stats().memory_limit; }
size_t set_cache_limit(size_t limit) { return cpu_allocator().set_cache_limit(limit); }
size_t get_cache_limit() { return cpu_allocator().stats().cache_limit; }
size_t set_wired_limit(size_t) { return 0; }
void clear_cache() { cpu_allocator().clear_cache(); }
MemoryStats get_memory_stats() { return cpu_allocator().stats(); }
void reset_memory_stats() { cpu_allocator().reset_stats(); }

std::map<std::string, double> memory_stats() {
  MemoryStats s = get_memory_stats();
  auto d = [](size_t v) { return static_cast<double>(v); };
  double handed = d(s.total_handed_out);
  return {
      {"active_memory", d(s.active_memory)},
      {"peak_memory", d(s.peak_memory)},
      {"cache_memory", d(s.cache_memory)},
      {"memory_limit", d(s.memory_limit)},
      {"cache_limit", d(s.cache_limit)},
      {"num_system_allocs", d(s.num_system_allocs)},
      {"num_system_frees", d(s.num_system_frees)},
      {"cache_hits", d(s.cache_hits)},
      {"cache_misses", d(s.cache_misses)},
      {"hit_rate", s.hit_rate()},
      {"active_requested", d(s.active_requested)},
      {"total_requested", d(s.total_requested)},
      {"total_handed_out", handed},
      {"fragmentation", handed > 0 ? 1.0 - d(s.total_requested) / handed : 0.0},
  };
}

}  // namespace mlx::core
