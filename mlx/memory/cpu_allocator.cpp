// Host memory: 64-byte aligned blocks from the C library behind the caching allocator.
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>

#include "mlx/memory/caching_allocator.h"

namespace mlx::core {

namespace allocator {
namespace {

void* host_malloc(size_t size) { return std::aligned_alloc(64, size); }
void host_free(void* block, size_t) { std::free(block); }
// Freed heap pages go back to the kernel (the C library keeps them otherwise), so that a cache
// trimmed after training shrinks the process.
void host_trim() { malloc_trim(0); }

size_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) {
    return size_t(1) << 34;
  }
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
}

CachingAllocator& cpu_allocator() {
  // Leaked on purpose: arrays in static storage may be freed after main returns.
  static auto* alloc = new CachingAllocator(
      SystemMemory{"cpu", host_malloc, host_free, nullptr, host_trim}, physical_memory());
  return *alloc;
}

}  // namespace

Allocator& allocator() { return cpu_allocator(); }

}  // namespace allocator

}  // namespace mlx::core
