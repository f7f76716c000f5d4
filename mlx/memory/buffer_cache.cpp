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
  if (spare_nodes_.size() < kMaxSpareNodes) {
    spare_nodes_.push_back(by_size_.extract(it));
    spare_entries_.splice(spare_entries_.begin(), lru_, entry);
  } else {
    by_size_.erase(it);
    lru_.erase(entry);
  }
  return block;
}

void BufferCache::put(void* block, size_t size, uint64_t now) {
  if (spare_entries_.empty()) {
    lru_.push_front(Entry{block, size, now, {}});
  } else {
    lru_.splice(lru_.begin(), spare_entries_, spare_entries_.begin());
    lru_.front() = Entry{block, size, now, {}};
  }
  if (spare_nodes_.empty()) {
    lru_.front().in_map = by_size_.emplace(size, lru_.begin());
  } else {
    BySize::node_type node = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
    node.key() = size;
    node.mapped() = lru_.begin();
    lru_.front().in_map = by_size_.insert(std::move(node));
  }
  cache_bytes_ += size;
}

void BufferCache::release_oldest() {
  Entry& oldest = lru_.back();
  free_fn_(oldest.block, oldest.size);
  cache_bytes_ -= oldest.size;
  by_size_.erase(oldest.in_map);
  lru_.pop_back();
}

size_t BufferCache::release(size_t bytes) {
  size_t released = 0;
  while (released < bytes && !lru_.empty()) {
    released += lru_.back().size;
    release_oldest();
  }
  return released;
}

size_t BufferCache::release_idle(uint64_t cutoff) {
  size_t released = 0;
  // The list is in put order, so the idle blocks are its tail.
  while (!lru_.empty() && lru_.back().put_time < cutoff) {
    released += lru_.back().size;
    release_oldest();
  }
  return released;
}

void BufferCache::touch_all(uint64_t now) {
  for (auto& e : lru_) {
    e.put_time = now;
  }
}

}  // namespace mlx::core::allocator
