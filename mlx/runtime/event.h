// A point in a stream's sequence of work. Signaled once the stream has completed
// everything up to it; a default Event is always signaled.
#pragma once

#include <cstdint>

#include "mlx/runtime/stream.h"

namespace mlx::core {

class Event {
 public:
  Event() = default;
  Event(Stream stream, uint64_t value) : stream_index_(stream.index), value_(value) {}

  bool valid() const { return stream_index_ >= 0; }
  bool is_signaled() const;
  // Blocks the calling thread until signaled.
  void wait() const;
  // Makes work submitted next to `consumer` wait for this event: on the device when both
  // streams are on devices that can wait for each other, else by blocking the calling thread.
  void wait(const Stream& consumer) const;
  int stream_index() const { return stream_index_; }
  uint64_t value() const { return value_; }

 private:
  int stream_index_ = -1;
  uint64_t value_ = 0;
};

}  // namespace mlx::core
