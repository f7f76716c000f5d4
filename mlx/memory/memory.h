// Public memory API (MLX names) plus richer statistics, cache policies and run-time settings.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "mlx/memory/cache_policy.h"

namespace mlx::core {

size_t get_active_memory();
size_t get_peak_memory();
void reset_peak_memory();
size_t get_cache_memory();
// Both setters return the previous limit.
size_t set_memory_limit(size_t limit);
size_t get_memory_limit();
size_t set_cache_limit(size_t limit);
size_t get_cache_limit();
// No wired memory on Linux; kept for API compatibility. Returns the previous value.
size_t set_wired_limit(size_t limit);
void clear_cache();

struct MemoryStats {
  size_t active_memory = 0;   // bytes of blocks handed out and not yet freed
  size_t peak_memory = 0;     // max of active_memory since the last reset
  size_t cache_memory = 0;    // bytes of freed blocks kept for reuse
  size_t peak_footprint = 0;  // max of active + cache (what the process holds) since the reset
  size_t memory_limit = 0;
  size_t cache_limit = 0;
  size_t num_system_allocs = 0;  // calls to the system allocator
  size_t num_system_frees = 0;
  size_t cache_hits = 0;  // requests served from the cache
  size_t cache_misses = 0;
  size_t num_retries = 0;       // system allocations retried after releasing the cache
  size_t num_ooms = 0;          // requests that raised out_of_memory
  size_t active_requested = 0;  // bytes asked for by live buffers (<= active_memory)
  size_t total_requested = 0;   // cumulative bytes asked for
  size_t total_handed_out = 0;  // cumulative bytes of the blocks given for them
  double hit_rate() const {
    size_t n = cache_hits + cache_misses;
    return n ? static_cast<double>(cache_hits) / static_cast<double>(n) : 0.0;
  }
  // Share of the handed-out bytes nobody asked for (rounding and reuse of larger blocks).
  double fragmentation() const {
    return total_handed_out
               ? 1.0 - static_cast<double>(total_requested) / static_cast<double>(total_handed_out)
               : 0.0;
  }
};

// Every device's allocator together: sums, with the peaks of the sums (not sums of peaks).
MemoryStats get_memory_stats();
// One device's allocator ("cpu", "cuda:0", "cuda:1", ...; "cuda" is "cuda:0"); throws
// std::invalid_argument for another name.
MemoryStats get_memory_stats(const std::string& device);
// The names of the devices that have an allocator, the host's first.
std::vector<std::string> memory_devices();
// The numbers by name, plus "hit_rate" / "cache_hit_rate", "fragmentation" /
// "fragmentation_rate" and "footprint" (active + cache). `device` empty: every device.
std::map<std::string, double> memory_stats(const std::string& device = "");
// Zeroes the counters (allocs, frees, hits, misses, retries, OOMs, cumulative bytes) and
// resets the peaks.
void reset_memory_stats();

struct MemoryInfo {
  size_t used;    // bytes the allocators hold: active + cache
  size_t total;   // the memory they were made for (physical RAM, plus each GPU's memory)
  size_t active;  // bytes of live buffers
  size_t cache;   // bytes kept for reuse
  size_t limit;   // the memory limit (of the host's allocator)
};
MemoryInfo memory_info(const std::string& device = "");
// Sets each device's memory limit to `fraction` (0, 1] of its memory; returns the previous
// limit of the host. Throws std::invalid_argument outside (0, 1].
size_t set_memory_pool_limit(double fraction);

// The cache policy of every allocator (a nonzero max_cache also sets the cache limit).
void set_cache_policy(const allocator::CachePolicy& policy);
allocator::CachePolicy get_cache_policy();
// The adaptive size classes of a device's allocator (empty unless adaptive).
std::vector<size_t> get_size_classes(const std::string& device = "cpu");
// Returns cached blocks idle longer than the policy allows to the system now.
void trim_idle_cache();

// Sets an environment variable of this process and applies the memory settings it names at
// once (MLX_MEMORY_DEBUG, MLX_CACHE_DEBUG, MLX_CACHE_POLICY and the MLX_CACHE_* knobs).
void set_env(const std::string& name, const std::string& value);

class out_of_memory : public std::exception {
 public:
  explicit out_of_memory(std::string msg) : msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }

 private:
  std::string msg_;
};

namespace allocator {
// The name of the op being evaluated on this thread (nullptr outside evaluation), named in
// debug logs and error messages; set through set_current_op (trace.h).
const char* current_op();
}  // namespace allocator

}  // namespace mlx::core
