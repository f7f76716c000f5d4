#include "mlx/runtime/scheduler.h"

#include <atomic>
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

  void enqueue(Task task, const std::function<void(Event)>& on_event) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!thread_.joinable()) {
      thread_ = std::thread([this] { loop(); });
    }
    progress_.wait(lock, [this] { return submitted_ - completed_ < kMaxInFlight; });
    on_event(Event(stream_, ++submitted_));
    queue_.emplace_back(submitted_, std::move(task));
    lock.unlock();
    task_ready_.notify_one();
  }

  bool is_idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    return submitted_ == completed_;
  }

  // Runs the task on the caller as the stream's next position; the event marks it.
  Event run_inline(const Task& task) {
    std::lock_guard<std::mutex> exec(exec_mutex_);
    uint64_t value;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      value = ++submitted_;
    }
    struct Complete {
      StreamWorker* w;
      uint64_t value;
      ~Complete() {
        w->device_->end_task(value);
        w->complete_one();
      }
    } complete{this, value};
    device_->begin_task();
    task();
    return Event(stream_, value);
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
      progress_.wait(lock, [&] { return completed_ >= submitted_; });
      if (error_) {
        auto e = error_;
        error_ = nullptr;
        std::rethrow_exception(e);
      }
    }
    device_->synchronize();
  }

  void record_error(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) {
      error_ = e;
    }
  }

 private:
  void loop() {
    for (;;) {
      Task task;
      uint64_t value;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        task_ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) {
          return;
        }
        value = queue_.front().first;
        task = std::move(queue_.front().second);
        queue_.pop_front();
      }
      {
        std::lock_guard<std::mutex> exec(exec_mutex_);
        try {
          device_->begin_task();
          task();
        } catch (...) {
          record_error(std::current_exception());
        }
        device_->end_task(value);
        // Release what the task captured before the next task looks at use counts.
        task = nullptr;
      }
      complete_one();
    }
  }

  void complete_one() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++completed_;
    }
    progress_.notify_all();
  }

  void wait_host(uint64_t value) {
    std::unique_lock<std::mutex> lock(mutex_);
    progress_.wait(lock, [&] { return completed_ >= value; });
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
  std::mutex exec_mutex_;  // held while a task runs, on the worker or inline
  std::condition_variable task_ready_;
  std::condition_variable progress_;
  std::deque<std::pair<uint64_t, Task>> queue_;  // (position, task)
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

struct Registry {
  std::mutex mutex;
  std::vector<Stream> streams;
  std::vector<std::unique_ptr<StreamWorker>> workers;
};

Registry& registry() {
  // Leaked on purpose: workers must outlive arrays destroyed during static destruction.
  static auto* r = new Registry();
  return *r;
}

StreamWorker& worker(int index) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (index < 0 || index >= static_cast<int>(r.workers.size())) {
    throw std::invalid_argument(msg("[scheduler] Unknown stream index ", index, "."));
  }
  return *r.workers[index];
}

}  // namespace

Stream new_stream(Device d) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  Stream s(static_cast<int>(r.streams.size()), d);
  r.streams.push_back(s);
  r.workers.push_back(std::make_unique<StreamWorker>(s));
  return s;
}

Stream get_stream(int index) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.streams.at(index);
}

int num_streams() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return static_cast<int>(r.streams.size());
}

void enqueue(const Stream& s, Task task, const std::function<void(Event)>& on_event) {
  worker(s.index).enqueue(std::move(task), on_event);
}
bool is_idle(const Stream& s) { return worker(s.index).is_idle(); }
Event run_inline(const Stream& s, const Task& task) { return worker(s.index).run_inline(task); }
void synchronize(const Stream& s) { worker(s.index).synchronize(); }

void synchronize_all() {
  int n = num_streams();
  for (int i = 0; i < n; ++i) {
    worker(i).synchronize();
  }
}

bool reached(int stream_index, uint64_t value) { return worker(stream_index).reached(value); }
void wait_for(int stream_index, uint64_t value) { worker(stream_index).wait_for(value); }
void wait_for_use(int stream_index, uint64_t value, const Stream& consumer) {
  worker(stream_index).wait_for_use(value, worker(consumer.index));
}

}  // namespace mlx::core::scheduler
