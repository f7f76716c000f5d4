// A small pool that splits loops over large arrays across the machine's cores.
#pragma once

#include <cstdint>
#include <functional>

namespace mlx::core::cpu {

int num_threads();

// parallel_for splits [0, n) into at most this many chunks per thread (taken in turn by the
// threads); a caller whose items cost the same can make n a multiple of the chunk count.
inline constexpr int64_t kChunksPerThread = 4;

// Calls fn(begin, end) over disjoint ranges covering [0, n). Runs inline when n < 2 * grain
// or when called from inside another parallel_for.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Below this many bytes touched, a kernel runs on one thread.
inline constexpr int64_t kParallelBytes = 1 << 17;

}  // namespace mlx::core::cpu
