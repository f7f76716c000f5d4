// Counts the primitives eval runs, by name, while enabled: how tests and debugging check
// that compile's fusion runs a region as one kernel. Off (one relaxed load per node) by default.
// With timing on, each primitive is also timed, GPU ones up to the end of their device work
// (the stream is synchronized after each, so the GPU runs one primitive at a time and launch
// latency counts): a profile of where a step's time goes, not of its overlap. By shape, each
// distinct list of input shapes and layouts counts apart ("Matmul [4096x128 r, 128x512 c]"):
// which of a model's products or copies is slow, not only which primitive.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlx::core {
class array;
}

namespace mlx::core::detail {

struct KernelCount {
  int64_t count = 0;
  double seconds = 0;  // 0 unless timing was on
};

void set_kernel_counting(bool enabled, bool timed = false, bool by_shape = false);
bool kernel_counting();
bool kernel_timing();
void count_kernel(const char* name, double seconds = 0);
// Counts a primitive run on `inputs`: under its name, or with their shapes and layouts when
// counting by shape (r: row-contiguous, c: column-contiguous, s: any other strides).
void count_kernel(const char* name, const std::vector<array>& inputs, double seconds);
// Counts the way a kernel computed its result ("Convolution:cudnn"), beside its primitive's
// name, when counting is on: how tests and profiles see which path ran.
inline void count_path(const char* path) {
  if (kernel_counting()) {
    count_kernel(path);
  }
}
// (name, count) pairs sorted by name; `reset` clears them.
std::vector<std::pair<std::string, KernelCount>> kernel_counts(bool reset);

}  // namespace mlx::core::detail
