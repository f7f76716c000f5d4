// The public memory API: it reports and steers every caching allocator of the process
// together (the host's and each GPU's), the way unified memory looks to a program.
#include "mlx/memory/memory.h"

#include <cstdlib>
#include <stdexcept>

#include "mlx/memory/caching_allocator.h"
#include "mlx/memory/residency.h"

namespace mlx::core {

namespace {

using allocator::CachingAllocator;

// Every allocator, created if need be: the host's first, then each GPU's. Frees the GPU has
// finished with are settled first, so that they do not count as active.
std::vector<CachingAllocator*> allocators() {
  allocator::allocator();
  static bool gpu = (allocator::init_gpu_allocator(), true);
  (void)gpu;
  allocator::release_finished_gpu_frees();
  return CachingAllocator::all();
}

// "cuda" names the first GPU ("cuda:0").
CachingAllocator* find_allocator(const std::string& device) {
  const std::string name = device == "cuda" ? "cuda:0" : device;
  std::string known;
  for (auto* a : allocators()) {
    if (name == a->name()) {
      return a;
    }
    known += (known.empty() ? "" : ", ") + std::string(a->name());
  }
  throw std::invalid_argument("[memory_stats] No allocator for device '" + device +
                              "' (devices: " + known + ").");
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

}  // namespace

// Sums over the allocators; the limits are those set for each (see set_memory_limit). The
// peaks are those of the sums, tracked as the allocators change.
MemoryStats get_memory_stats() {
  MemoryStats total;
  MemoryStats host = allocators().front()->stats();
  total.memory_limit = host.memory_limit;
  total.cache_limit = host.cache_limit;
  for (auto* a : allocators()) {
    MemoryStats s = a->stats();
    total.active_memory += s.active_memory;
    total.cache_memory += s.cache_memory;
    total.num_system_allocs += s.num_system_allocs;
    total.num_system_frees += s.num_system_frees;
    total.cache_hits += s.cache_hits;
    total.cache_misses += s.cache_misses;
    total.num_retries += s.num_retries;
    total.num_ooms += s.num_ooms;
    total.active_requested += s.active_requested;
    total.total_requested += s.total_requested;
    total.total_handed_out += s.total_handed_out;
  }
  if (CachingAllocator::keeps_global_sums()) {
    total.peak_memory = std::max(CachingAllocator::global_peak_active(), total.active_memory);
    total.peak_footprint = std::max(CachingAllocator::global_peak_footprint(),
                                    total.active_memory + total.cache_memory);
  } else {  // one allocator: its peaks are the process's
    total.peak_memory = host.peak_memory;
    total.peak_footprint = host.peak_footprint;
  }
  return total;
}

MemoryStats get_memory_stats(const std::string& device) { return find_allocator(device)->stats(); }

std::vector<std::string> memory_devices() {
  std::vector<std::string> names;
  for (auto* a : allocators()) {
    names.push_back(a->name());
  }
  return names;
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
  CachingAllocator::reset_global_peaks();
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
  CachingAllocator::reset_global_peaks();
}

std::map<std::string, double> memory_stats(const std::string& device) {
  MemoryStats s = device.empty() ? get_memory_stats() : get_memory_stats(device);
  auto d = [](size_t v) { return static_cast<double>(v); };
  return {
      {"active_memory", d(s.active_memory)},
      {"peak_memory", d(s.peak_memory)},
      {"cache_memory", d(s.cache_memory)},
      {"footprint", d(s.active_memory + s.cache_memory)},
      {"peak_footprint", d(s.peak_footprint)},
      {"memory_limit", d(s.memory_limit)},
      {"cache_limit", d(s.cache_limit)},
      {"num_system_allocs", d(s.num_system_allocs)},
      {"num_system_frees", d(s.num_system_frees)},
      {"cache_hits", d(s.cache_hits)},
      {"cache_misses", d(s.cache_misses)},
      {"hit_rate", s.hit_rate()},
      {"cache_hit_rate", s.hit_rate()},
      {"num_retries", d(s.num_retries)},
      {"num_ooms", d(s.num_ooms)},
      {"active_requested", d(s.active_requested)},
      {"total_requested", d(s.total_requested)},
      {"total_handed_out", d(s.total_handed_out)},
      {"fragmentation", s.fragmentation()},
      {"fragmentation_rate", s.fragmentation()},
  };
}

MemoryInfo memory_info(const std::string& device) {
  MemoryInfo info{0, 0, 0, 0, 0};
  auto chosen = device.empty() ? allocators() : std::vector{find_allocator(device)};
  for (auto* a : chosen) {
    MemoryStats s = a->stats();
    info.active += s.active_memory;
    info.cache += s.cache_memory;
    info.total += a->total_memory();
    info.limit = info.limit ? info.limit : s.memory_limit;
  }
  info.used = info.active + info.cache;
  return info;
}

size_t set_memory_pool_limit(double fraction) {
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    throw std::invalid_argument("[set_memory_pool_limit] fraction must be in (0, 1], got " +
                                std::to_string(fraction) + ".");
  }
  size_t old = get_memory_limit();
  for (auto* a : allocators()) {
    a->set_memory_limit(static_cast<size_t>(fraction * static_cast<double>(a->total_memory())));
  }
  return old;
}

void set_cache_policy(const allocator::CachePolicy& policy) {
  allocator::validate(policy);
  for (auto* a : allocators()) {
    a->set_policy(policy);
  }
}

allocator::CachePolicy get_cache_policy() { return allocators().front()->policy(); }

std::vector<size_t> get_size_classes(const std::string& device) {
  return find_allocator(device)->size_classes();
}

void trim_idle_cache() {
  allocators();
  CachingAllocator::trim_all_idle();
}

void set_env(const std::string& name, const std::string& value) {
  if (name.empty() || name.find('=') != std::string::npos) {
    throw std::invalid_argument("[set_env] Invalid variable name '" + name + "'.");
  }
  bool policy_var = name == "MLX_CACHE_POLICY" || name.rfind("MLX_CACHE_", 0) == 0;
  allocator::CachePolicy policy;
  std::string old;
  const char* prev = std::getenv(name.c_str());
  bool had = prev != nullptr;
  old = had ? prev : "";
  setenv(name.c_str(), value.c_str(), 1);
  if (policy_var && name != "MLX_CACHE_DEBUG") {
    try {
      policy = allocator::cache_policy_from_env();
    } catch (...) {
      had ? setenv(name.c_str(), old.c_str(), 1) : unsetenv(name.c_str());  // keep it usable
      throw;
    }
    set_cache_policy(policy);
  }
  bool memory_debug = env_flag("MLX_MEMORY_DEBUG"), cache_debug = env_flag("MLX_CACHE_DEBUG");
  for (auto* a : allocators()) {
    a->set_debug(memory_debug, cache_debug);
  }
}

}  // namespace mlx::core
