// Allocation tracing: while a trace runs, every caching allocator records each allocation,
// free, system allocation and release, retry and out-of-memory with its size, device, stream
// and the op that asked (and, when stacks are on, the Python stack that created the op).
// Off, the cost is one relaxed atomic load per allocator call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlx::core::allocator {

// The op being evaluated on this thread (set by the evaluator around a primitive's kernel).
struct OpContext {
  const char* name;       // the primitive's name (static storage)
  const void* primitive;  // identifies the op for its creation stack
  int stream;             // the stream's index
};
void set_current_op(const OpContext* op);
const OpContext* current_op_context();

namespace trace {

enum class Kind : uint8_t {
  alloc,          // a block handed out (from the cache or the system)
  free,           // a block given back (kept in the cache or returned to the system)
  segment_alloc,  // the system allocator was called
  segment_free,   // a block went back to the system (cache release, trim or uncached free)
  retry,          // a system allocation failed and was retried after releasing the cache
  oom,            // the request could not be met: out_of_memory was thrown
};

struct Event {
  uint64_t seq;      // order across every allocator (set by record)
  uint64_t time_ns;  // since the trace started (set by record)
  const void* address;
  size_t size;       // bytes of the block
  size_t requested;  // bytes asked for (alloc, oom)
  const char* op;    // the op that asked (nullptr: outside evaluation)
  const char* device;
  uint32_t stack;  // creation stack id (0: none)
  int32_t stream;  // -1: outside evaluation
  Kind kind;
  bool cached;    // alloc: served from the cache; free: kept in the cache
  size_t active;  // the allocator's active bytes after the event
  size_t cache;   // its cached bytes after the event
};

extern std::atomic<bool> g_enabled;
inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

// Captures the calling thread's stack and returns its id (0 when it cannot). Installed by the
// Python bindings; called only while a trace with stacks runs.
using StackHook = uint32_t (*)();
extern std::atomic<StackHook> g_stack_hook;
// Called where an op is created: remembers its creation stack while a trace with stacks runs.
void record_origin(const void* primitive, uint32_t stack);
inline void note_origin(const void* primitive) {
  StackHook hook = g_stack_hook.load(std::memory_order_relaxed);
  if (hook != nullptr && primitive != nullptr) {
    record_origin(primitive, hook());
  }
}
// The creation stack of the op that asks now (or, outside evaluation, the caller's stack).
uint32_t current_stack();

// Starts a trace (discarding the previous one); `hook` captures stacks (nullptr: no stacks).
// With max_events > 0 only the latest max_events events are kept (their seq shows the gap).
void start(StackHook hook, size_t max_events = 0);
// Stops the trace and returns its events from every allocator, in order.
std::vector<Event> stop();
// Appends an event (allocators call it while holding their own lock).
void record(Event e);

}  // namespace trace
}  // namespace mlx::core::allocator
