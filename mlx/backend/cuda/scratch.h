// Device scratch memory for one task, usable from host-compiled files (the cuDNN graphs) as
// well as the kernels.
#pragma once

#include "mlx/memory/residency.h"

namespace mlx::core::cu {

// Device scratch memory for the task being issued, returned to the cache when it goes out of
// scope: later work on the same stream may reuse it, and other streams wait for this one.
class Scratch {
 public:
  explicit Scratch(size_t bytes)
      : buf_(bytes ? allocator::gpu_malloc(bytes) : allocator::Buffer{}) {}
  ~Scratch() {
    if (buf_) {
      allocator::gpu_free(buf_, allocator::current_gpu_stream_bit());
    }
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(buf_.raw_ptr());
  }

 private:
  allocator::Buffer buf_;
};

}  // namespace mlx::core::cu
