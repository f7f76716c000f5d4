// How the caching allocator sizes, keeps and trims blocks: the three knobs of the project's
// documents (page size, bytes freed at once when trimming, maximum cache), named presets,
// adaptive size classes and idle trimming. Set from C++, Python or environment variables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace mlx::core::allocator {

struct CachePolicy {
  // Requests of a page or more round up to whole pages; a cached block may serve a request
  // that it exceeds by at most max(page_size, size / 4). A power of two, at least 4 KiB.
  size_t page_size = 4096;
  // When the cache must shrink, free at least this many bytes at once (0: just the excess),
  // so that a cache at its limit is not trimmed on every free.
  size_t trim_bytes = 0;
  // The cache limit; 0 means "the memory limit" (the default).
  size_t max_cache = 0;
  // Size classes picked from the observed request sizes (see SizeClasses).
  bool adaptive = false;
  // Cached blocks unused for this long go back to the system (0: never).
  double idle_seconds = 0;
};

// "default", "throughput_training", "low_latency_inference", "distributed_training",
// "adaptive". Throws std::invalid_argument naming the known presets for any other name.
CachePolicy cache_policy_preset(const std::string& name);
std::vector<std::string> cache_policy_presets();
// The policy from MLX_CACHE_POLICY (a preset) overridden by MLX_CACHE_PAGE_SIZE,
// MLX_CACHE_TRIM_BYTES, MLX_CACHE_MAX_BYTES, MLX_CACHE_ADAPTIVE and MLX_CACHE_IDLE_SECONDS.
// Byte values take K/M/G suffixes (powers of 1024). Throws on a malformed value.
CachePolicy cache_policy_from_env();
// Throws std::invalid_argument naming the field and value when the policy is unusable.
void validate(const CachePolicy& policy);
// Parses "64M", "4096", "1.5G" (powers of 1024); throws std::invalid_argument naming `what`.
size_t parse_bytes(const std::string& text, const char* what);

// Adaptive size classes: the sizes requested most often (in whole pages) become classes, and a
// request rounds up to the smallest class within the allowed waste. Blocks of one class then
// serve every request size near it, so a workload whose sizes vary around a few values (length
// buckets, the tail batch) reuses blocks that exact-size rounding would miss.
class SizeClasses {
 public:
  // Records a request of `rounded` bytes (already page-rounded); re-picks the classes every
  // kWindow requests from decayed counts.
  void observe(size_t rounded);
  // The class for a request of `rounded` bytes (itself when no class is within `max_waste`).
  size_t pick(size_t rounded, size_t max_waste) const;
  const std::vector<size_t>& classes() const { return classes_; }
  void clear();

  static constexpr size_t kWindow = 2048;
  static constexpr size_t kMaxClasses = 256;

 private:
  void repick();
  std::unordered_map<size_t, double> counts_;
  std::vector<size_t> classes_;  // sorted
  size_t since_repick_ = 0;
};

}  // namespace mlx::core::allocator
