// A size-keyed cache of freed blocks shared by every backend: best fit within a bounded
// waste, least-recently-used blocks released first. Not thread safe; the owner locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <vector>

namespace mlx::core::allocator {

class BufferCache {
 public:
  using FreeFn = std::function<void(void* block, size_t size)>;
  explicit BufferCache(FreeFn free_fn) : free_fn_(std::move(free_fn)) {
    spare_nodes_.reserve(kMaxSpareNodes);
  }
  ~BufferCache() { clear(); }
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;

  // Smallest cached block of at least `size` bytes whose waste is bounded by
  // max(page, size / 4); nullptr if none. On success `*block_size` is set.
  void* reuse(size_t size, size_t* block_size);
  // Keeps a freed block; `now` (any clock, in ns) dates it for release_idle.
  void put(void* block, size_t size, uint64_t now = 0);
  // Frees least-recently-used blocks until at least `bytes` were released (or the cache is
  // empty). Returns the bytes released.
  size_t release(size_t bytes);
  // Frees the blocks put before `cutoff` (same clock as put). Returns the bytes released.
  size_t release_idle(uint64_t cutoff);
  // Dates every cached block `now` (when idle trimming starts, so that it does not count the
  // time before as idle).
  void touch_all(uint64_t now);
  size_t clear() { return release(cache_bytes_); }
  size_t cache_bytes() const { return cache_bytes_; }
  size_t num_blocks() const { return by_size_.size(); }
  // Calls fn(block, size) for each cached block.
  template <typename Fn>
  void for_each(Fn fn) const {
    for (auto& e : lru_) {
      fn(e.block, e.size);
    }
  }

  size_t page_size() const { return page_; }
  void set_page_size(size_t page) { page_ = page; }
  size_t max_waste(size_t size) const { return size / 4 > page_ ? size / 4 : page_; }

  static constexpr size_t kPage = 4096;

 private:
  struct Entry {
    void* block;
    size_t size;
    uint64_t put_time;
    std::multimap<size_t, std::list<Entry>::iterator>::iterator in_map;
  };
  using BySize = std::multimap<size_t, std::list<Entry>::iterator>;
  void release_oldest();
  FreeFn free_fn_;
  std::list<Entry> lru_;  // front = most recently freed
  BySize by_size_;
  // The list and map nodes of blocks reused, kept for later puts: a put and a reuse per op
  // would otherwise cost two heap allocations and two frees.
  static constexpr size_t kMaxSpareNodes = 64;
  std::list<Entry> spare_entries_;
  std::vector<BySize::node_type> spare_nodes_;
  size_t cache_bytes_ = 0;
  size_t page_ = kPage;
};

}  // namespace mlx::core::allocator
