// Temporary kernel memory from the caching allocator (counted in the memory statistics and
// reused through the buffer cache), released on scope exit.
#pragma once

#include <algorithm>
#include <cstddef>

#include "mlx/memory/allocator.h"

namespace mlx::core::cpu {

template <typename T>
class Scratch {
 public:
  explicit Scratch(size_t n) : buf_(allocator::malloc(std::max<size_t>(n, 1) * sizeof(T))) {}
  ~Scratch() { allocator::free(buf_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* data() { return static_cast<T*>(buf_.raw_ptr()); }

 private:
  allocator::Buffer buf_;
};

}  // namespace mlx::core::cpu
