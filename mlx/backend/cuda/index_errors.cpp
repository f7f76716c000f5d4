#include "mlx/backend/cuda/index_errors.h"

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>

#include "mlx/backend/common/index_utils.h"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/runtime.h"

namespace mlx::core::cu {

namespace {

struct Record {
  IndexErrorRecord* host = nullptr;  // mapped, pinned, never freed (kernels may write at exit)
  IndexErrorRecord* dev = nullptr;
};
struct Records {
  std::mutex mutex;
  std::unordered_map<cudaStream_t, Record> by_stream;
};
Records& records() {
  static auto* r = new Records();  // leaked, with the records
  return *r;
}

// The host address of stream `s`'s record, or null while no kernel has asked for it (so none
// can have written it).
IndexErrorRecord* existing_record(cudaStream_t s) {
  auto& r = records();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_stream.find(s);
  return it == r.by_stream.end() ? nullptr : it->second.host;
}

std::atomic_ref<int> flag_of(IndexErrorRecord* h) { return std::atomic_ref<int>(h->flag); }

}  // namespace

IndexErrorRecord* index_error_record() {
  auto& r = records();
  std::lock_guard<std::mutex> lock(r.mutex);
  Record& rec = r.by_stream[stream()];
  if (rec.host == nullptr) {
    void* h = nullptr;
    MLX_CUDA_CHECK(cudaHostAlloc(&h, sizeof(IndexErrorRecord), cudaHostAllocMapped));
    *static_cast<IndexErrorRecord*>(h) = IndexErrorRecord{};
    void* d = nullptr;
    MLX_CUDA_CHECK(cudaHostGetDevicePointer(&d, h, 0));
    rec = {static_cast<IndexErrorRecord*>(h), static_cast<IndexErrorRecord*>(d)};
  }
  return rec.dev;
}

bool has_index_error(cudaStream_t s) {
  auto* h = existing_record(s);
  return h != nullptr && flag_of(h).load(std::memory_order_acquire) != 0;
}

void raise_index_errors(cudaStream_t s) {
  if (!has_index_error(s)) {
    return;
  }
  auto* h = existing_record(s);
  IndexErrorRecord e = *h;
  flag_of(h).store(0, std::memory_order_release);
  std::string index =
      e.is_uint64 ? std::to_string(static_cast<uint64_t>(e.index)) : std::to_string(e.index);
  throw_index_error(e.op ? e.op : "index", index, e.axis, e.size, e.slice);
}

}  // namespace mlx::core::cu
