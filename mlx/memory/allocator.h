// The allocator interface every backend implements, and the handle arrays keep.
#pragma once

#include <cstddef>

namespace mlx::core::allocator {

// An opaque handle to a block of memory. ptr() is the backend's handle; raw_ptr() is a
// host-addressable pointer to the bytes.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(void* ptr) : ptr_(ptr) {}
  void* ptr() const { return ptr_; }
  void* raw_ptr() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  void* ptr_ = nullptr;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Buffer malloc(size_t size) = 0;
  virtual void free(Buffer buffer) = 0;
  // Usable bytes of the block behind `buffer` (at least what was requested).
  virtual size_t size(Buffer buffer) const = 0;
};

Allocator& allocator();

inline Buffer malloc(size_t size) { return allocator().malloc(size); }
inline void free(Buffer buffer) { allocator().free(buffer); }

}  // namespace mlx::core::allocator
