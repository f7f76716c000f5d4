// The public memory API: it reports and steers every caching allocator of the process
// together (the host's and each GPU's), the way unified memory looks to a program.
#include "mlx/memory/memory.h"

#include "mlx/memory/caching_allocator.h"

namespace mlx::core {

namespace {

using allocator::CachingAllocator;

// Touch the host allocator so it is registered even before the first host allocation.
std::vector<CachingAllocator*> allocators() {
  allocator::allocator();
  return CachingAllocator::all();
}

}  // namespace

// Sums over the allocators; the limits are those set for each (see set_memory_limit), and the
// peak is the sum of each allocator's peak (an upper bound of the peak of the sum).
MemoryStats get_memory_stats() {
  MemoryStats total;
  MemoryStats host = allocators().front()->stats();
  total.memory_limit = host.memory_limit;
  total.cache_limit = host.cache_limit;
  for (auto* a : allocators()) {
    MemoryStats s = a->stats();
    total.active_memory += s.active_memory;
    total.peak_memory += s.peak_memory;
    total.cache_memory += s.cache_memory;
    total.num_system_allocs += s.num_system_allocs;
    total.num_system_frees += s.num_system_frees;
    total.cache_hits += s.cache_hits;
    total.cache_misses += s.cache_misses;
    total.active_requested += s.active_requested;
    total.total_requested += s.total_requested;
    total.total_handed_out += s.total_handed_out;
  }
  return total;
}

size_t get_active_memory() { return get_memory_stats().active_memory; }
size_t get_peak_memory() { return get_memory_stats().peak_memory; }
size_t get_cache_memory() { return get_memory_stats().cache_memory; }
size_t get_memory_limit() { return allocators().front()->stats().memory_limit; }
size_t get_cache_limit() { return allocators().front()->stats().cache_limit; }

void reset_peak_memory() {
  for (auto* a : allocators()) {
    a->reset_peak();
  }
}

// Limits apply to each allocator: a program that sets 1 GiB may hold 1 GiB on each side.
size_t set_memory_limit(size_t limit) {
  size_t old = get_memory_limit();
  for (auto* a : allocators()) {
    a->set_memory_limit(limit);
  }
  return old;
}

size_t set_cache_limit(size_t limit) {
  size_t old = get_cache_limit();
  for (auto* a : allocators()) {
    a->set_cache_limit(limit);
  }
  return old;
}

size_t set_wired_limit(size_t) { return 0; }

void clear_cache() {
  for (auto* a : allocators()) {
    a->clear_cache();
  }
}

void reset_memory_stats() {
  for (auto* a : allocators()) {
    a->reset_stats();
  }
}

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
