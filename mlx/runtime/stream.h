#pragma once

#include <cstdint>
#include <ostream>
#include <variant>

#include "mlx/runtime/device.h"

namespace mlx::core {

struct Stream {
  int index;
  Device device;
  explicit Stream(int index, Device device) : index(index), device(device) {}
};

inline bool operator==(const Stream& a, const Stream& b) { return a.index == b.index; }
inline bool operator!=(const Stream& a, const Stream& b) { return a.index != b.index; }
std::ostream& operator<<(std::ostream& os, const Stream& s);

// Default stream of a device for the calling thread: each thread has its own (set_default_stream
// replaces it for that thread).
Stream default_stream(Device d);
void set_default_stream(Stream s);
Stream new_stream(Device d);
// A stream that stands for a separate stream in each thread that uses it, created the first
// time that thread uses it (MLX's new_thread_local_stream).
struct ThreadLocalStream {
  Device device;
  uint64_t id;
};
ThreadLocalStream new_thread_local_stream(Device d);
// The calling thread's stream of `s`.
Stream stream_from_thread_local_stream(const ThreadLocalStream& s);
// Blocks until everything submitted to the stream (or to every stream) has finished.
void synchronize(Stream s);
void synchronize();

using StreamOrDevice = std::variant<std::monostate, Stream, Device>;
// Resolves "nothing" to the default stream of the default device, a device to its default
// stream.
Stream to_stream(StreamOrDevice s);
Stream to_stream(StreamOrDevice s, Device default_);

}  // namespace mlx::core
