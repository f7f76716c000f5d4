// Unified memory without managed memory: a buffer's bytes live on the host, on the GPU, or
// both, and move once when the other side needs them. The GPU backend implements these
// (backend/cuda/allocator.cpp; backend/no_gpu where there is none).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlx/memory/allocator.h"

namespace mlx::core::allocator {

inline constexpr uint8_t kOnHost = 1;
inline constexpr uint8_t kOnDevice = 2;

// A block of device memory from the GPU's caching allocator; throws out_of_memory.
Buffer gpu_malloc(size_t nbytes);
// Returns a block; `streams` are the GPU streams (bits) that may still use it.
void gpu_free(Buffer block, uint64_t streams);
// Copies between the two sides, ordered after the GPU work that produced the source (on the
// GPU stream of the calling thread when it runs one, else once that work is done).
void copy_to_host(void* dst, const void* src, size_t nbytes);
void copy_to_device(void* dst, const void* src, size_t nbytes);
// The bit of the GPU stream whose work the calling thread is issuing (0 for none).
uint64_t current_gpu_stream_bit();
// Creates each GPU's caching allocator ("cuda:0", ...) when there are GPUs (so that limits set
// before the first GPU allocation apply to them too).
void init_gpu_allocator();
// Returns to their caches the freed blocks whose GPU streams have finished with them (a block
// freed while several streams exist waits for them; until then it counts as active).
void release_finished_gpu_frees();

}  // namespace mlx::core::allocator
