#include "mlx/runtime/event.h"

#include "mlx/runtime/scheduler.h"

namespace mlx::core {

bool Event::is_signaled() const { return !valid() || scheduler::reached(stream_index_, value_); }

void Event::wait() const {
  if (valid()) {
    scheduler::wait_for(stream_index_, value_);
  }
}

void Event::wait(const Stream& consumer) const {
  if (valid()) {
    scheduler::wait_for_use(stream_index_, value_, consumer);
  }
}

}  // namespace mlx::core
