// A size-keyed cache of freed blocks shared by every backend: best fit within a bounded
// waste, least-recently-used blocks released first. Not thread safe; the owner locks.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <map>

namespace mlx::core::allocator {

class BufferCache {
 public:
  using FreeFn = std::function<void(void* block, size_t size)>;
  explicit BufferCache(FreeFn free_fn) : free_fn_(std::move(free_fn)) {}
  ~BufferCache() { clear(); }
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;

  // Smallest cached block of at least `size` bytes whose waste is bounded by
  // max(page, size / 4); nullptr if none. On success `*block_size` is set.
  void* reuse(size_t size, size_t* block_size);
  void put(void* block, size_t size);
  // Frees least-recently-used blocks until at least `bytes` were released (or the cache is
  // empty). Returns the bytes released.
  size_t release(size_t bytes);
  size_t clear() { return release(cache_bytes_); }
  size_t cache_bytes() const { return cache_bytes_; }
  size_t num_blocks() const { return by_size_.size(); }

  static constexpr size_t kPage = 4096;
  static size_t max_waste(size_t size) { return size / 4 > kPage ? size / 4 : kPage; }

 private:
  struct Entry {
    void* block;
    size_t size;
    std::multimap<size_t, std::list<Entry>::iterator>::iterator in_map;
  };
  FreeFn free_fn_;
  std::list<Entry> lru_;  // front = most recently freed
  std::multimap<size_t, std::list<Entry>::iterator> by_size_;
  size_t cache_bytes_ = 0;
};

}  // namespace mlx::core::allocator
