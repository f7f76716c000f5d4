#include "mlx/runtime/scheduler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "mlx/runtime/device_stream.h"
#include "mlx/utils.h"

namespace mlx::core::scheduler {

namespace {

// Positions of a stream run one at a time and in order: position p runs once p - 1 completed,
// on the worker (when it was submitted) or on the thread that reserved it (inline). No other
// lock is needed to keep a stream's tasks exclusive.
constexpr auto kIdleExit = std::chrono::seconds(2);

class StreamWorker {
 public:
  explicit StreamWorker(Stream s)
      : stream_(s),
        device_(s.device.type == Device::gpu ? make_gpu_stream(s)
                                             : std::make_unique<DeviceStream>()) {}
  ~StreamWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    task_ready_.notify_all();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  const Stream& stream() const { return stream_; }
  DeviceStream& device() { return *device_; }

  uint64_t reserve() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ++reserved_;
  }

  bool run_inline_if_next(uint64_t position, const Task& task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (completed_ + 1 != position) {
        return false;
      }
    }
    // Completes the position even when the task throws.
    struct Complete {
      StreamWorker* w;
      uint64_t position;
      ~Complete() {
        w->device_->end_task(position);
        w->complete_one();
      }
    } complete{this, position};
    device_->begin_task();
    task();
    return true;
  }

  // Tasks at increasing positions, handed over under one lock with one wake-up.
  void submit(std::vector<std::pair<uint64_t, Task>> tasks) {
    if (tasks.empty()) {
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (!running_) {
      if (thread_.joinable()) {
        thread_.join();  // stopped (not idle): it needs mutex_ no more
      }
      running_ = true;
      thread_ = std::thread([this] { loop(); });
    }
    // Waits outside any graph lock: the positions before these are all handed off or running,
    // so the worker can always catch up.
    const uint64_t first = tasks.front().first;
    await_completed(lock, first > kMaxInFlight ? first - kMaxInFlight : 0);
    for (auto& [position, task] : tasks) {
      // Usually positions arrive in order; a thread that reserved earlier may submit later.
      auto at = queue_.end();
      while (at != queue_.begin() && std::prev(at)->first > position) {
        --at;
      }
      queue_.emplace(at, position, std::move(task));
    }
    lock.unlock();
    task_ready_.notify_one();
  }

  // The host part of tasks up to `value` ran, and their device work is done.
  bool reached(uint64_t value) {
    if (value <= device_done_.load(std::memory_order_acquire)) {
      return true;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (completed_ < value) {
        return false;
      }
    }
    if (!device_->completed(value)) {
      return false;
    }
    note_device_done(value);
    return true;
  }

  void wait_for(uint64_t value) {
    if (value <= device_done_.load(std::memory_order_acquire)) {
      return;
    }
    wait_host(value);
    device_->wait(value);
    note_device_done(value);
  }

  // Makes `consumer`'s later work wait for this stream's work up to `value`.
  void wait_for_use(uint64_t value, StreamWorker& consumer) {
    if (&consumer == this || value <= device_done_.load(std::memory_order_acquire)) {
      return;
    }
    wait_host(value);
    if (!consumer.device_->wait_on_device(*device_, value)) {
      device_->wait(value);
      note_device_done(value);
    }
  }

  void synchronize() {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      await_completed(lock, reserved_);
      if (error_) {
        auto e = error_;
        error_ = nullptr;
        std::rethrow_exception(e);
      }
    }
    device_->synchronize();
  }

 private:
  void loop() {
    for (;;) {
      Task task;
      uint64_t value;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        auto ready = [this] {
          return stop_ || (!queue_.empty() && queue_.front().first == completed_ + 1);
        };
        // An idle worker ends (threads that made streams of their own may be gone); submit
        // starts a new one.
        if (!task_ready_.wait_for(lock, kIdleExit, ready) && queue_.empty()) {
          running_ = false;
          thread_.detach();  // nothing joins it: it touches no member after this
          return;
        }
        if (!ready()) {
          continue;  // waiting for a position that another thread still has to hand off
        }
        if (queue_.empty() || queue_.front().first != completed_ + 1) {
          running_ = false;
          return;  // stopping
        }
        value = queue_.front().first;
        task = std::move(queue_.front().second);
        queue_.pop_front();
      }
      try {
        device_->begin_task();
        task();
      } catch (...) {
        record_error(std::current_exception());
      }
      device_->end_task(value);
      // Release what the task captured before the next task looks at use counts.
      task = nullptr;
      complete_one();
    }
  }

  void record_error(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) {
      error_ = e;
    }
  }

  // Wakes the threads waiting for progress only once the least position they wait for is
  // reached (not at every position, each a system call on both sides), and the worker only
  // when an inline task leaves it a queued next position.
  void complete_one() {
    bool wake_waiters, wake_worker;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++completed_;
      wake_waiters = completed_ >= least_awaited_;
      if (wake_waiters) {
        least_awaited_ = kNobodyWaits;
      }
      wake_worker = !queue_.empty() && queue_.front().first == completed_ + 1;
    }
    if (wake_waiters) {
      progress_.notify_all();
    }
    if (wake_worker) {
      task_ready_.notify_one();
    }
  }

  // Blocks until `target` positions completed; `lock` holds mutex_. A woken waiter whose
  // target is not reached yet registers it again.
  void await_completed(std::unique_lock<std::mutex>& lock, uint64_t target) {
    while (completed_ < target) {
      least_awaited_ = std::min(least_awaited_, target);
      progress_.wait(lock);
    }
  }

  void wait_host(uint64_t value) {
    std::unique_lock<std::mutex> lock(mutex_);
    await_completed(lock, value);
  }

  void note_device_done(uint64_t value) {
    uint64_t seen = device_done_.load(std::memory_order_relaxed);
    while (seen < value && !device_done_.compare_exchange_weak(seen, value)) {
    }
  }

  Stream stream_;
  std::unique_ptr<DeviceStream> device_;
  std::atomic<uint64_t> device_done_{0};  // every task up to here is done, device work included
  std::mutex mutex_;
  std::condition_variable task_ready_;
  std::condition_variable progress_;
  std::deque<std::pair<uint64_t, Task>> queue_;  // (position, task), sorted by position
  uint64_t reserved_ = 0;
  uint64_t completed_ = 0;
  static constexpr uint64_t kNobodyWaits = UINT64_MAX;
  uint64_t least_awaited_ = kNobodyWaits;  // the least target of the threads in await_completed
  std::exception_ptr error_;
  bool stop_ = false;
  bool running_ = false;  // thread_ is running loop()
  std::thread thread_;
};

// Workers by stream index, read without a lock (every eval looks its streams up): fixed chunks
// that are never moved, published with release stores.
constexpr int kChunkSize = 1024;
constexpr int kChunks = 1024;

struct Registry {
  std::mutex mutex;  // serializes stream creation
  std::atomic<int> count{0};
  std::atomic<std::atomic<StreamWorker*>*> chunks[kChunks] = {};
};

Registry& registry() {
  // Leaked on purpose: workers must outlive arrays destroyed during static destruction.
  static auto* r = new Registry();
  return *r;
}

StreamWorker& worker(int index) {
  auto& r = registry();
  if (index >= 0 && index < kChunkSize * kChunks) {
    auto* chunk = r.chunks[index / kChunkSize].load(std::memory_order_acquire);
    if (chunk != nullptr) {
      if (auto* w = chunk[index % kChunkSize].load(std::memory_order_acquire)) {
        return *w;
      }
    }
  }
  throw std::invalid_argument(msg("[scheduler] Unknown stream index ", index, "."));
}

}  // namespace

Stream new_stream(Device d) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  int index = r.count.load(std::memory_order_relaxed);
  if (index >= kChunkSize * kChunks) {
    throw std::runtime_error(msg("[new_stream] Too many streams (", index, ")."));
  }
  auto& slot = r.chunks[index / kChunkSize];
  if (slot.load(std::memory_order_relaxed) == nullptr) {
    auto* chunk = new std::atomic<StreamWorker*>[kChunkSize];
    for (int i = 0; i < kChunkSize; ++i) {
      chunk[i].store(nullptr, std::memory_order_relaxed);
    }
    slot.store(chunk, std::memory_order_release);
  }
  Stream s(index, d);
  slot.load(std::memory_order_relaxed)[index % kChunkSize].store(new StreamWorker(s),
                                                                 std::memory_order_release);
  r.count.store(index + 1, std::memory_order_release);
  return s;
}

Stream get_stream(int index) { return worker(index).stream(); }

int num_streams() { return registry().count.load(std::memory_order_acquire); }

uint64_t reserve(const Stream& s) { return worker(s.index).reserve(); }
bool run_inline_if_next(const Stream& s, uint64_t position, const Task& task) {
  return worker(s.index).run_inline_if_next(position, task);
}
void submit(const Stream& s, uint64_t position, Task task) {
  std::vector<std::pair<uint64_t, Task>> one;
  one.emplace_back(position, std::move(task));
  worker(s.index).submit(std::move(one));
}
void submit(const Stream& s, std::vector<std::pair<uint64_t, Task>> tasks) {
  worker(s.index).submit(std::move(tasks));
}
void synchronize(const Stream& s) { worker(s.index).synchronize(); }

void synchronize_all() {
  int n = num_streams();
  for (int i = 0; i < n; ++i) {
    worker(i).synchronize();
  }
}

void device_synchronize(const Stream& s) { worker(s.index).device().synchronize(); }

bool reached(int stream_index, uint64_t value) { return worker(stream_index).reached(value); }
void wait_for(int stream_index, uint64_t value) { worker(stream_index).wait_for(value); }
void wait_for_use(int stream_index, uint64_t value, const Stream& consumer) {
  worker(stream_index).wait_for_use(value, worker(consumer.index));
}

}  // namespace mlx::core::scheduler
