// Counts the primitives eval runs, by name, while enabled: how tests and debugging check
// that compile's fusion runs a region as one kernel. Off (one relaxed load per node) by default.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlx::core::detail {

void set_kernel_counting(bool enabled);
bool kernel_counting();
void count_kernel(const char* name);
// (name, count) pairs sorted by name; `reset` clears them.
std::vector<std::pair<std::string, int64_t>> kernel_counts(bool reset);

}  // namespace mlx::core::detail
