#include "mlx/memory/caching_allocator.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace mlx::core::allocator {

namespace {

thread_local const char* tls_current_op = nullptr;

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

std::string format_bytes(size_t bytes) {
  char buf[64];
  if (bytes >= (size_t(1) << 30)) {
    std::snprintf(buf, sizeof(buf), "%zu B (%.2f GiB)", bytes, bytes / double(1 << 30));
  } else if (bytes >= (size_t(1) << 20)) {
    std::snprintf(buf, sizeof(buf), "%zu B (%.2f MiB)", bytes, bytes / double(1 << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%zu B", bytes);
  }
  return buf;
}

const char* op_name() { return tls_current_op ? tls_current_op : "user"; }

struct Registry {
  std::mutex mutex;
  std::vector<CachingAllocator*> allocators;
};
Registry& registry() {
  static auto* r = new Registry();  // leaked with the allocators themselves
  return *r;
}

}  // namespace

void set_current_op(const char* name) { tls_current_op = name; }
const char* current_op() { return tls_current_op; }

CachingAllocator::CachingAllocator(SystemMemory system, size_t memory_limit)
    : system_(system), cache_([this](void* block, size_t size) {
        system_.free(block, size);
        stats_.num_system_frees++;
        if (cache_debug_) {
          std::fprintf(stderr, "[cache:%s] release %s\n", system_.name, format_bytes(size).c_str());
        }
      }) {
  stats_.memory_limit = memory_limit;
  stats_.cache_limit = memory_limit;
  memory_debug_ = env_flag("MLX_MEMORY_DEBUG");
  cache_debug_ = env_flag("MLX_CACHE_DEBUG");
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.allocators.push_back(this);
}

CachingAllocator::~CachingAllocator() {
  {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::erase(r.allocators, this);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.clear();
}

std::vector<CachingAllocator*> CachingAllocator::all() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.allocators;
}

size_t CachingAllocator::round_size(size_t size) {
  constexpr size_t page = BufferCache::kPage;
  if (size >= page) {
    return (size + page - 1) / page * page;
  }
  size_t rounded = 64;  // one cache line: also the alignment of every block
  while (rounded < size) {
    rounded <<= 1;
  }
  return rounded;
}

void* CachingAllocator::system_malloc_locked(size_t size) {
  // Stay within the limit: give cached blocks back before asking the system.
  size_t held = stats_.active_memory + cache_.cache_bytes();
  if (held + size > stats_.memory_limit) {
    cache_.release(held + size - stats_.memory_limit);
  }
  if (stats_.active_memory + size > stats_.memory_limit) {
    return nullptr;
  }
  void* block = system_.malloc(size);
  if (block == nullptr && (cache_.cache_bytes() > 0 || system_.synchronize)) {
    // Release the cache (after the device finished with it) and try once more.
    if (system_.synchronize) {
      system_.synchronize();
    }
    cache_.clear();
    block = system_.malloc(size);
  }
  if (block != nullptr) {
    stats_.num_system_allocs++;
  }
  return block;
}

Buffer CachingAllocator::malloc(size_t requested) {
  size_t size = round_size(requested);
  std::lock_guard<std::mutex> lock(mutex_);
  size_t block_size = 0;
  void* block = cache_.reuse(size, &block_size);
  bool hit = block != nullptr;
  if (hit) {
    stats_.cache_hits++;
  } else {
    stats_.cache_misses++;
    block = system_malloc_locked(size);
    block_size = size;
    if (block == nullptr) {
      std::ostringstream msg;
      msg << "[malloc] Out of memory on " << system_.name << " while evaluating " << op_name()
          << ": requested " << format_bytes(requested) << ", active "
          << format_bytes(stats_.active_memory) << ", cache " << format_bytes(cache_.cache_bytes())
          << ", limit " << format_bytes(stats_.memory_limit) << ".";
      throw out_of_memory(msg.str());
    }
  }
  live_.emplace(block, Block{block_size, requested});
  stats_.active_memory += block_size;
  stats_.active_requested += requested;
  stats_.total_requested += requested;
  stats_.total_handed_out += block_size;
  if (stats_.active_memory > stats_.peak_memory) {
    stats_.peak_memory = stats_.active_memory;
  }
  if (memory_debug_ || (cache_debug_ && hit)) {
    std::fprintf(stderr, "[memory:%s] malloc %s for %s -> block %s (%s), active %s\n", system_.name,
                 format_bytes(requested).c_str(), op_name(), format_bytes(block_size).c_str(),
                 hit ? "cache hit" : "system", format_bytes(stats_.active_memory).c_str());
  }
  return Buffer(block);
}

void CachingAllocator::free(Buffer buffer) {
  if (!buffer) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(buffer.ptr());
  if (it == live_.end()) {
    std::fprintf(stderr, "[memory:%s] free of unknown block %p ignored\n", system_.name,
                 buffer.ptr());
    return;
  }
  Block b = it->second;
  live_.erase(it);
  stats_.active_memory -= b.size;
  stats_.active_requested -= b.requested;
  bool keep = b.size <= stats_.cache_limit;
  if (keep) {
    cache_.put(buffer.ptr(), b.size);
    trim_cache_locked(stats_.cache_limit);
  } else {
    system_.free(buffer.ptr(), b.size);
    stats_.num_system_frees++;
  }
  if (memory_debug_) {
    std::fprintf(stderr, "[memory:%s] free %s -> %s, active %s, cache %s\n", system_.name,
                 format_bytes(b.size).c_str(), keep ? "cache" : "system",
                 format_bytes(stats_.active_memory).c_str(),
                 format_bytes(cache_.cache_bytes()).c_str());
  }
}

size_t CachingAllocator::size(Buffer buffer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(buffer.ptr());
  return it == live_.end() ? 0 : it->second.size;
}

void CachingAllocator::trim_cache_locked(size_t keep_at_most) {
  if (cache_.cache_bytes() > keep_at_most) {
    cache_.release(cache_.cache_bytes() - keep_at_most);
  }
}

size_t CachingAllocator::set_memory_limit(size_t limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t old = stats_.memory_limit;
  stats_.memory_limit = limit;
  if (stats_.active_memory + cache_.cache_bytes() > limit) {
    trim_cache_locked(limit > stats_.active_memory ? limit - stats_.active_memory : 0);
  }
  return old;
}

size_t CachingAllocator::set_cache_limit(size_t limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t old = stats_.cache_limit;
  stats_.cache_limit = limit;
  trim_cache_locked(limit);
  return old;
}

void CachingAllocator::clear_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.clear();
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_memory = stats_.active_memory;
}

void CachingAllocator::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_memory = stats_.active_memory;
  stats_.num_system_allocs = stats_.num_system_frees = 0;
  stats_.cache_hits = stats_.cache_misses = 0;
  stats_.total_requested = stats_.total_handed_out = 0;
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats s = stats_;
  s.cache_memory = cache_.cache_bytes();
  return s;
}

}  // namespace mlx::core::allocator
