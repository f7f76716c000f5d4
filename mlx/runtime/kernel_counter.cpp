#include "mlx/runtime/kernel_counter.h"

#include <atomic>
#include <map>
#include <mutex>

#include "mlx/array.h"

namespace mlx::core::detail {

namespace {
std::atomic<bool> enabled{false};
std::atomic<bool> timed{false};
std::atomic<bool> by_shape{false};
std::mutex& counts_mutex() {
  static auto* m = new std::mutex();  // leaked: eval may run during static destruction
  return *m;
}
std::map<std::string, KernelCount>& counts() {
  static auto* c = new std::map<std::string, KernelCount>();
  return *c;
}
}  // namespace

void set_kernel_counting(bool on, bool with_times, bool shapes) {
  timed.store(on && with_times, std::memory_order_relaxed);
  by_shape.store(on && shapes, std::memory_order_relaxed);
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

void count_kernel(const char* name, const std::vector<array>& inputs, double seconds) {
  if (!by_shape.load(std::memory_order_relaxed)) {
    count_kernel(name, seconds);
    return;
  }
  std::string key = name;
  key += " [";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const array& in = inputs[i];
    key += i ? ", " : "";
    for (int d = 0; d < in.ndim(); ++d) {
      key += (d ? "x" : "") + std::to_string(in.shape(d));
    }
    key += in.ndim() ? " " : "scalar ";
    key += in.flags().row_contiguous ? 'r' : in.flags().col_contiguous ? 'c' : 's';
  }
  key += "]";
  count_kernel(key.c_str(), seconds);
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
