// Public memory API (MLX names) plus richer statistics.
#pragma once

#include <cstddef>
#include <map>
#include <string>

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
  size_t active_memory = 0;  // bytes of blocks handed out and not yet freed
  size_t peak_memory = 0;    // max of active_memory since the last reset
  size_t cache_memory = 0;   // bytes of freed blocks kept for reuse
  size_t memory_limit = 0;
  size_t cache_limit = 0;
  size_t num_system_allocs = 0;  // calls to the system allocator
  size_t num_system_frees = 0;
  size_t cache_hits = 0;  // requests served from the cache
  size_t cache_misses = 0;
  size_t active_requested = 0;  // bytes asked for by live buffers (<= active_memory)
  size_t total_requested = 0;   // cumulative bytes asked for
  size_t total_handed_out = 0;  // cumulative bytes of the blocks given for them
  double hit_rate() const {
    size_t n = cache_hits + cache_misses;
    return n ? static_cast<double>(cache_hits) / static_cast<double>(n) : 0.0;
  }
};

MemoryStats get_memory_stats();
// The same numbers by name, plus "hit_rate" and "fragmentation" (1 - requested/handed out).
std::map<std::string, double> memory_stats();
// Zeroes the counters (allocs, frees, hits, misses, cumulative bytes) and resets the peak.
void reset_memory_stats();

class out_of_memory : public std::exception {
 public:
  explicit out_of_memory(std::string msg) : msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }

 private:
  std::string msg_;
};

namespace allocator {
// The op being evaluated on this thread, named in debug logs and out-of-memory errors.
void set_current_op(const char* name);
const char* current_op();
}  // namespace allocator

}  // namespace mlx::core
