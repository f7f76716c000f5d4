#include "mlx/runtime/scheduler.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "mlx/utils.h"

namespace mlx::core::scheduler {

namespace {

class StreamWorker {
 public:
  explicit StreamWorker(Stream s) : stream_(s) {}
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
    queue_.push_back(std::move(task));
    lock.unlock();
    task_ready_.notify_one();
  }

  bool is_idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    return submitted_ == completed_;
  }

  void run_inline(const Task& task) {
    std::lock_guard<std::mutex> exec(exec_mutex_);
    task();
  }

  bool reached(uint64_t value) {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_ >= value;
  }

  void wait_for(uint64_t value) {
    std::unique_lock<std::mutex> lock(mutex_);
    progress_.wait(lock, [&] { return completed_ >= value; });
  }

  void synchronize() {
    std::unique_lock<std::mutex> lock(mutex_);
    progress_.wait(lock, [&] { return completed_ >= submitted_; });
    if (error_) {
      auto e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
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
      {
        std::unique_lock<std::mutex> lock(mutex_);
        task_ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) {
          return;
        }
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      {
        std::lock_guard<std::mutex> exec(exec_mutex_);
        try {
          task();
        } catch (...) {
          record_error(std::current_exception());
        }
        // Release what the task captured before the next task looks at use counts.
        task = nullptr;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++completed_;
      }
      progress_.notify_all();
    }
  }

  Stream stream_;
  std::mutex mutex_;
  std::mutex exec_mutex_;  // held while a task runs, on the worker or inline
  std::condition_variable task_ready_;
  std::condition_variable progress_;
  std::deque<Task> queue_;
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
void run_inline(const Stream& s, const Task& task) { worker(s.index).run_inline(task); }
void synchronize(const Stream& s) { worker(s.index).synchronize(); }

void synchronize_all() {
  int n = num_streams();
  for (int i = 0; i < n; ++i) {
    worker(i).synchronize();
  }
}

bool reached(int stream_index, uint64_t value) { return worker(stream_index).reached(value); }
void wait_for(int stream_index, uint64_t value) { worker(stream_index).wait_for(value); }

}  // namespace mlx::core::scheduler
