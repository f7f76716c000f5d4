#include "mlx/runtime/kernel_counter.h"

#include <atomic>
#include <map>
#include <mutex>

namespace mlx::core::detail {

namespace {
std::atomic<bool> enabled{false};
std::atomic<bool> timed{false};
std::mutex& counts_mutex() {
  static auto* m = new std::mutex();  // leaked: eval may run during static destruction
  return *m;
}
std::map<std::string, KernelCount>& counts() {
  static auto* c = new std::map<std::string, KernelCount>();
  return *c;
}
}  // namespace

void set_kernel_counting(bool on, bool with_times) {
  timed.store(on && with_times, std::memory_order_relaxed);
  enabled.store(on, std::memory_order_relaxed);
}
bool kernel_counting() { return enabled.load(std::memory_order_relaxed); }
bool kernel_timing() { return timed.load(std::memory_order_relaxed); }

void count_kernel(const char* name, double seconds) {
  std::lock_guard<std::mutex> lock(counts_mutex());
  KernelCount& c = counts()[name];
  ++c.count;
  c.seconds += seconds;
}

std::vector<std::pair<std::string, KernelCount>> kernel_counts(bool reset) {
  std::lock_guard<std::mutex> lock(counts_mutex());
  std::vector<std::pair<std::string, KernelCount>> out(counts().begin(), counts().end());
  if (reset) {
    counts().clear();
  }
  return out;
}

}  // namespace mlx::core::detail
