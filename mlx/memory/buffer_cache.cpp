#include "mlx/memory/buffer_cache.h"

namespace mlx::core::allocator {

void* BufferCache::reuse(size_t size, size_t* block_size) {
  auto it = by_size_.lower_bound(size);
  if (it == by_size_.end() || it->first - size > max_waste(size)) {
    return nullptr;
  }
  auto entry = it->second;
  void* block = entry->block;
  *block_size = entry->size;
  cache_bytes_ -= entry->size;
  by_size_.erase(it);
  lru_.erase(entry);
  return block;
}

void BufferCache::put(void* block, size_t size) {
  lru_.push_front(Entry{block, size, {}});
  lru_.front().in_map = by_size_.emplace(size, lru_.begin());
  cache_bytes_ += size;
}

size_t BufferCache::release(size_t bytes) {
  size_t released = 0;
  while (released < bytes && !lru_.empty()) {
    Entry& oldest = lru_.back();
    free_fn_(oldest.block, oldest.size);
    released += oldest.size;
    cache_bytes_ -= oldest.size;
    by_size_.erase(oldest.in_map);
    lru_.pop_back();
  }
  return released;
}

}  // namespace mlx::core::allocator
