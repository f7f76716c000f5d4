#include "mlx/memory/cache_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace mlx::core::allocator {

namespace {

constexpr size_t KiB = size_t(1) << 10, MiB = size_t(1) << 20, GiB = size_t(1) << 30;

// The three templates of the documents, plus the two modes of this project.
const std::vector<std::pair<std::string, CachePolicy>>& presets() {
  static const std::vector<std::pair<std::string, CachePolicy>> p = {
      {"default", CachePolicy{}},
      {"throughput_training", CachePolicy{16 * KiB, 512 * MiB, 4 * GiB, false, 0}},
      {"low_latency_inference", CachePolicy{4 * KiB, 64 * MiB, 1 * GiB, false, 0}},
      {"distributed_training", CachePolicy{32 * KiB, 1 * GiB, 8 * GiB, false, 0}},
      {"adaptive", CachePolicy{4 * KiB, 0, 0, true, 30.0}},
  };
  return p;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

}  // namespace

std::vector<std::string> cache_policy_presets() {
  std::vector<std::string> names;
  for (auto& [name, _] : presets()) {
    names.push_back(name);
  }
  return names;
}

CachePolicy cache_policy_preset(const std::string& name) {
  for (auto& [n, p] : presets()) {
    if (n == name) {
      return p;
    }
  }
  std::string known;
  for (auto& n : cache_policy_presets()) {
    known += (known.empty() ? "" : ", ") + n;
  }
  throw std::invalid_argument("[set_cache_policy] Unknown preset '" + name + "' (known: " + known +
                              ").");
}

size_t parse_bytes(const std::string& text, const char* what) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  std::string unit = end ? std::string(end) : "";
  double scale = 1;
  if (unit == "K" || unit == "k" || unit == "KB" || unit == "KiB") {
    scale = double(KiB);
  } else if (unit == "M" || unit == "m" || unit == "MB" || unit == "MiB") {
    scale = double(MiB);
  } else if (unit == "G" || unit == "g" || unit == "GB" || unit == "GiB") {
    scale = double(GiB);
  } else if (!unit.empty()) {
    v = -1;
  }
  if (end == text.c_str() || !(v >= 0) || !std::isfinite(v)) {
    throw std::invalid_argument(std::string("[cache policy] ") + what + ": '" + text +
                                "' is not a byte count (e.g. 4096, 64K, 512M, 4G).");
  }
  return static_cast<size_t>(v * scale);
}

void validate(const CachePolicy& p) {
  if (p.page_size < 4096 || (p.page_size & (p.page_size - 1)) != 0) {
    throw std::invalid_argument(
        "[set_cache_policy] page_size must be a power of two of at least "
        "4096 bytes, got " +
        std::to_string(p.page_size) + ".");
  }
  if (!(p.idle_seconds >= 0) || !std::isfinite(p.idle_seconds)) {
    throw std::invalid_argument("[set_cache_policy] idle_seconds must be >= 0, got " +
                                std::to_string(p.idle_seconds) + ".");
  }
}

CachePolicy cache_policy_from_env() {
  CachePolicy p =
      env("MLX_CACHE_POLICY") ? cache_policy_preset(env("MLX_CACHE_POLICY")) : CachePolicy{};
  if (auto v = env("MLX_CACHE_PAGE_SIZE")) {
    p.page_size = parse_bytes(v, "MLX_CACHE_PAGE_SIZE");
  }
  if (auto v = env("MLX_CACHE_TRIM_BYTES")) {
    p.trim_bytes = parse_bytes(v, "MLX_CACHE_TRIM_BYTES");
  }
  if (auto v = env("MLX_CACHE_MAX_BYTES")) {
    p.max_cache = parse_bytes(v, "MLX_CACHE_MAX_BYTES");
  }
  if (auto v = env("MLX_CACHE_ADAPTIVE")) {
    p.adaptive = v[0] != '0';
  }
  if (auto v = env("MLX_CACHE_IDLE_SECONDS")) {
    char* end = nullptr;
    p.idle_seconds = std::strtod(v, &end);
    if (end == v || *end != '\0') {
      throw std::invalid_argument(std::string("[cache policy] MLX_CACHE_IDLE_SECONDS: '") + v +
                                  "' is not a number of seconds.");
    }
  }
  validate(p);
  return p;
}

void SizeClasses::observe(size_t rounded) {
  counts_[rounded] += 1;
  if (++since_repick_ >= kWindow) {
    repick();
  }
}

void SizeClasses::repick() {
  since_repick_ = 0;
  // The most frequent sizes; a size seen once in a window is no class.
  std::vector<std::pair<double, size_t>> ranked;
  for (auto& [size, count] : counts_) {
    if (count >= 2) {
      ranked.emplace_back(count, size);
    }
  }
  size_t keep = std::min(ranked.size(), kMaxClasses);
  std::partial_sort(ranked.begin(), ranked.begin() + keep, ranked.end(),
                    [](auto& a, auto& b) { return a.first > b.first; });
  classes_.clear();
  for (size_t i = 0; i < keep; ++i) {
    classes_.push_back(ranked[i].second);
  }
  std::sort(classes_.begin(), classes_.end());
  // Halve the counts so the classes follow a workload that changes, and forget rare sizes.
  for (auto it = counts_.begin(); it != counts_.end();) {
    it->second /= 2;
    it = it->second < 0.5 ? counts_.erase(it) : std::next(it);
  }
}

size_t SizeClasses::pick(size_t rounded, size_t max_waste) const {
  auto it = std::lower_bound(classes_.begin(), classes_.end(), rounded);
  return it != classes_.end() && *it - rounded <= max_waste ? *it : rounded;
}

void SizeClasses::clear() {
  counts_.clear();
  classes_.clear();
  since_repick_ = 0;
}

}  // namespace mlx::core::allocator
