// What a device adds to a stream's worker: where its work runs and when that work is done.
// A CPU stream's work is done when its task returns (the defaults); a GPU stream's task only
// issues work, which completes later on the device, so the GPU backend overrides these.
#pragma once

#include <cstdint>
#include <memory>

#include "mlx/runtime/stream.h"

namespace mlx::core {

class DeviceStream {
 public:
  virtual ~DeviceStream() = default;
  // Around each task, on the thread that runs it (the worker, or a caller running inline);
  // end_task runs even when the task throws. `value` is the task's position in the stream.
  virtual void begin_task() {}
  virtual void end_task(uint64_t value) {}
  // Whether the device work of the tasks up to `value` (already run on the host) is done.
  virtual bool completed(uint64_t value) { return true; }
  // Blocks the host until the device work of the tasks up to `value` is done.
  virtual void wait(uint64_t value) {}
  // Makes this stream's later work wait on the device for `producer`'s work up to `value`;
  // false when the two devices cannot wait for each other (the host must wait instead).
  virtual bool wait_on_device(DeviceStream& producer, uint64_t value) { return false; }
  // Blocks until all issued device work is done; throws on a device error.
  virtual void synchronize() {}
};

// The GPU backend's stream (backend/cuda, or backend/no_gpu where there is none).
std::unique_ptr<DeviceStream> make_gpu_stream(const Stream& s);

}  // namespace mlx::core
