#include "mlx/runtime/kernel_counter.h"

#include <atomic>
#include <map>
#include <mutex>

namespace mlx::core::detail {

namespace {
std::atomic<bool> enabled{false};
std::mutex& counts_mutex() {
  static auto* m = new std::mutex();  // leaked: eval may run during static destruction
  return *m;
}
std::map<std::string, int64_t>& counts() {
  static auto* c = new std::map<std::string, int64_t>();
  return *c;
}
}  // namespace

void set_kernel_counting(bool on) { enabled.store(on, std::memory_order_relaxed); }
bool kernel_counting() { return enabled.load(std::memory_order_relaxed); }

void count_kernel(const char* name) {
  std::lock_guard<std::mutex> lock(counts_mutex());
  ++counts()[name];
}

std::vector<std::pair<std::string, int64_t>> kernel_counts(bool reset) {
  std::lock_guard<std::mutex> lock(counts_mutex());
  std::vector<std::pair<std::string, int64_t>> out(counts().begin(), counts().end());
  if (reset) {
    counts().clear();
  }
  return out;
}

}  // namespace mlx::core::detail
