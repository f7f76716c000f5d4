// Streams and their workers. Each stream owns one worker thread that runs its tasks in order
// (a GPU stream's tasks issue device work through its DeviceStream); an Event is a position in
// a stream's sequence of tasks, reached when its host part ran and its device work is done.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>

#include "mlx/runtime/event.h"
#include "mlx/runtime/stream.h"

namespace mlx::core::scheduler {

using Task = std::function<void()>;

// Most tasks a stream may have queued; submitting more blocks until the worker catches up,
// so a long lazy loop cannot pile up unbounded work (and memory).
inline constexpr uint64_t kMaxInFlight = 4096;

Stream new_stream(Device d);
Stream get_stream(int index);
int num_streams();

// Queues `task` on the stream's worker. `on_event` receives the event that will signal the
// task's completion before the task can start.
void enqueue(const Stream& s, Task task, const std::function<void(Event)>& on_event);
// True when the stream has no queued or running task: work may then run on the caller.
bool is_idle(const Stream& s);
// Runs `task` on the calling thread as the stream's next task (ordered after anything the
// stream is running); the event marks its completion, device work included.
Event run_inline(const Stream& s, const Task& task);
// Waits for every queued task of the stream; rethrows the first error one raised.
void synchronize(const Stream& s);
void synchronize_all();

// Used by Event.
bool reached(int stream_index, uint64_t value);
void wait_for(int stream_index, uint64_t value);
void wait_for_use(int stream_index, uint64_t value, const Stream& consumer);

}  // namespace mlx::core::scheduler
