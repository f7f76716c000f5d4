#include "mlx/backend/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mlx::core::cpu {

namespace {

thread_local bool tls_in_parallel = false;

class ThreadPool {
 public:
  explicit ThreadPool(int n_workers) {
    for (int i = 0; i < n_workers; ++i) {
      workers_.emplace_back([this] { loop(); });
    }
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) {
      t.join();
    }
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t n, int64_t n_chunks, const std::function<void(int64_t, int64_t)>& fn) {
    // One job at a time; concurrent callers (several streams) take turns.
    std::lock_guard<std::mutex> job_lock(job_mutex_);
    Job job{&fn, n, n_chunks};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      ++generation_;
    }
    cv_.notify_all();
    work_on(job);
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return job.done == job.n_chunks && job.active == 0; });
    job_ = nullptr;
    if (job.error) {
      std::rethrow_exception(job.error);
    }
  }

 private:
  struct Job {
    const std::function<void(int64_t, int64_t)>* fn;
    int64_t n;
    int64_t n_chunks;
    std::atomic<int64_t> next{0};
    int64_t done = 0;  // guarded by mutex_
    int active = 0;    // pool workers inside work_on; guarded by mutex_
    std::exception_ptr error;
  };

  void work_on(Job& job) {
    tls_in_parallel = true;
    int64_t finished = 0;
    for (int64_t c; (c = job.next.fetch_add(1)) < job.n_chunks;) {
      int64_t begin = job.n * c / job.n_chunks;
      int64_t end = job.n * (c + 1) / job.n_chunks;
      try {
        (*job.fn)(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!job.error) {
          job.error = std::current_exception();
        }
      }
      ++finished;
    }
    tls_in_parallel = false;
    if (finished) {
      std::lock_guard<std::mutex> lock(mutex_);
      job.done += finished;
    }
    if (finished) {
      done_cv_.notify_all();
    }
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      Job* job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || (job_ != nullptr && generation_ != seen); });
        if (stop_) {
          return;
        }
        seen = generation_;
        job = job_;
        ++job->active;
      }
      work_on(*job);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --job->active;
      }
      done_cv_.notify_all();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

int configured_threads() {
  if (const char* env = std::getenv("MLX_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) {
      return n;
    }
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& pool() {
  static auto* p = new ThreadPool(configured_threads() - 1);  // the caller is one more
  return *p;
}

}  // namespace

int num_threads() { return pool().size(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) {
    return;
  }
  int threads = num_threads();
  if (tls_in_parallel || threads == 1 || n < 2 * grain) {
    fn(0, n);
    return;
  }
  int64_t n_chunks = std::min<int64_t>(n / grain, threads * 4);
  pool().run(n, n_chunks, fn);
}

}  // namespace mlx::core::cpu
