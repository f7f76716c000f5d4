// Out-of-range indices found by GPU kernels. A kernel cannot throw, so the first bad index of a
// CUDA stream's work is written to the stream's small record in mapped host memory, and the host
// raises it (with the CPU kernels' message) the next time it waits for that stream's work: never
// in another thread's wait for its own stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mlx::core::cu {

struct IndexErrorRecord {
  int flag;  // 0: no error; set once by the first kernel thread that finds one
  int axis;
  int64_t size;    // of the indexed axis
  int64_t slice;   // elements read or written from the index on
  int64_t index;   // the index as given (before wrapping), as the bits of an int64
  int is_uint64;   // whether those bits are a uint64 (printed unsigned)
  const char* op;  // host pointer to the public op's name, only carried by the device
};

// The record of the stream that kernels issued here run on (cu::stream()), as they address it.
IndexErrorRecord* index_error_record();
// Whether a kernel of stream `s` has recorded an error not raised yet.
bool has_index_error(cudaStream_t s);
// Throws std::out_of_range for a recorded error of stream `s` (and clears it). Call it after
// the stream's work that may have recorded one is known to be done.
void raise_index_errors(cudaStream_t s);

}  // namespace mlx::core::cu
