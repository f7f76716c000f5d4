#include "mlx/memory/trace.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>

namespace mlx::core::allocator {

namespace {

thread_local const OpContext* tls_op = nullptr;

struct TraceState {
  std::mutex mutex;
  std::vector<trace::Event> events;
  std::chrono::steady_clock::time_point start;
  uint64_t seq = 0;
  size_t max_events = 0;  // 0: no bound; else a ring of the latest events
  size_t head = 0;        // where the ring writes next once full
  // Creation stack per op, for ops created while the trace runs. An address is reused only
  // after its op is gone, and a newer op at that address records itself first.
  std::mutex origins_mutex;
  std::unordered_map<const void*, uint32_t> origins;
};
TraceState& state() {
  static auto* s = new TraceState();  // leaked: allocations may be traced during exit
  return *s;
}

}  // namespace

void set_current_op(const OpContext* op) { tls_op = op; }
const OpContext* current_op_context() { return tls_op; }

namespace trace {

std::atomic<bool> g_enabled{false};
std::atomic<StackHook> g_stack_hook{nullptr};

void record_origin(const void* primitive, uint32_t stack) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.origins_mutex);
  s.origins[primitive] = stack;
}

uint32_t current_stack() {
  StackHook hook = g_stack_hook.load(std::memory_order_relaxed);
  if (hook == nullptr) {
    return 0;
  }
  if (tls_op == nullptr) {
    return hook();  // a buffer made outside evaluation (mx.array, a load): its caller's stack
  }
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.origins_mutex);
  auto it = s.origins.find(tls_op->primitive);
  return it == s.origins.end() ? 0 : it->second;
}

void start(StackHook hook, size_t max_events) {
  auto& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.events.clear();
    s.seq = 0;
    s.max_events = max_events;
    s.head = 0;
    s.start = std::chrono::steady_clock::now();
  }
  {
    std::lock_guard<std::mutex> lock(s.origins_mutex);
    s.origins.clear();
  }
  g_stack_hook.store(hook, std::memory_order_relaxed);
  g_enabled.store(true, std::memory_order_release);
}

std::vector<Event> stop() {
  g_enabled.store(false, std::memory_order_release);
  g_stack_hook.store(nullptr, std::memory_order_relaxed);
  auto& s = state();
  std::vector<Event> out;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    // Oldest first: a full ring starts at its write position.
    std::rotate(s.events.begin(), s.events.begin() + static_cast<std::ptrdiff_t>(s.head),
                s.events.end());
    s.head = 0;
    out.swap(s.events);
  }
  std::lock_guard<std::mutex> lock(s.origins_mutex);
  s.origins.clear();
  return out;
}

void record(Event e) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto now = std::chrono::steady_clock::now();
  e.seq = s.seq++;
  e.time_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - s.start).count());
  if (s.max_events == 0 || s.events.size() < s.max_events) {
    s.events.push_back(e);
  } else {
    s.events[s.head] = e;
    s.head = (s.head + 1) % s.max_events;
  }
}

}  // namespace trace
}  // namespace mlx::core::allocator
