// Streams and their workers. A stream's work is a sequence of positions (1, 2, ...) that run
// one at a time, in order: on the stream's worker thread, or on the thread that evaluates when
// the stream has caught up with it (a GPU stream's tasks issue device work through its
// DeviceStream). An Event is a position, reached when its host part ran and its device work is
// done. Positions are reserved first (while eval holds the graph claimed, so stream order
// follows claim order) and each reserved position is then either run inline or submitted.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <utility>
#include <vector>

#include "mlx/runtime/event.h"
#include "mlx/runtime/stream.h"

namespace mlx::core::scheduler {

using Task = std::function<void()>;

// Most positions a stream's worker may lag behind a submitted task; submitting further ahead
// blocks until the worker catches up, so a long lazy loop cannot pile up unbounded work.
inline constexpr uint64_t kMaxInFlight = 4096;

Stream new_stream(Device d);
Stream get_stream(int index);
int num_streams();

// Reserves the stream's next position. Every reserved position must then be given to exactly
// one of run_inline_if_next or submit (or the stream stops there).
uint64_t reserve(const Stream& s);
// Runs `task` as the stream's `position` on the calling thread when every earlier position has
// completed, and returns true; returns false (nothing run) otherwise. The task's exceptions
// propagate (the position completes anyway).
bool run_inline_if_next(const Stream& s, uint64_t position, const Task& task);
// Hands the task at `position` to the stream's worker (blocking while it is more than
// kMaxInFlight positions ahead of the worker). Exceptions of the task are kept for
// synchronize.
void submit(const Stream& s, uint64_t position, Task task);
// submit for tasks at increasing positions of `s`, handed over at once: one lock and one
// wake-up of the worker instead of one per task (the blocking applies to the first).
void submit(const Stream& s, std::vector<std::pair<uint64_t, Task>> tasks);
// Waits for every position reserved so far; rethrows the first error a submitted task raised.
void synchronize(const Stream& s);
void synchronize_all();
// Blocks until the device work issued so far on `s` is done, from inside one of its tasks too
// (kernel timing).
void device_synchronize(const Stream& s);

// Used by Event.
bool reached(int stream_index, uint64_t value);
void wait_for(int stream_index, uint64_t value);
void wait_for_use(int stream_index, uint64_t value, const Stream& consumer);

}  // namespace mlx::core::scheduler
