#include "mlx/backend/cuda/index_errors.h"

#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mlx/backend/common/index_utils.h"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/runtime.h"

namespace mlx::core::cu {

namespace {

struct Records {
  std::mutex mutex;
  std::vector<IndexErrorRecord*> host;  // per device; mapped, pinned, never freed
  std::vector<IndexErrorRecord*> dev;
};
Records& records() {
  static auto* r = new Records();  // leaked: kernels may still write at exit
  return *r;
}

// The host and device addresses of `device`'s record, made on first use.
std::pair<IndexErrorRecord*, IndexErrorRecord*> record(int device) {
  auto& r = records();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (static_cast<int>(r.host.size()) <= device) {
    r.host.resize(device + 1, nullptr);
    r.dev.resize(device + 1, nullptr);
  }
  if (r.host[device] == nullptr) {
    use_device(device);
    void* h = nullptr;
    MLX_CUDA_CHECK(cudaHostAlloc(&h, sizeof(IndexErrorRecord), cudaHostAllocMapped));
    *static_cast<IndexErrorRecord*>(h) = IndexErrorRecord{};
    void* d = nullptr;
    MLX_CUDA_CHECK(cudaHostGetDevicePointer(&d, h, 0));
    r.host[device] = static_cast<IndexErrorRecord*>(h);
    r.dev[device] = static_cast<IndexErrorRecord*>(d);
  }
  return {r.host[device], r.dev[device]};
}

}  // namespace

IndexErrorRecord* index_error_record(int device) { return record(device).second; }

namespace {

// The host address of `device`'s record, or null while no kernel has asked for it (so none
// can have written it).
IndexErrorRecord* existing_record(int device) {
  auto& r = records();
  std::lock_guard<std::mutex> lock(r.mutex);
  return device < static_cast<int>(r.host.size()) ? r.host[device] : nullptr;
}

std::atomic_ref<int> flag_of(IndexErrorRecord* h) { return std::atomic_ref<int>(h->flag); }

}  // namespace

bool has_index_error(int device) {
  auto* h = existing_record(device);
  return h != nullptr && flag_of(h).load(std::memory_order_acquire) != 0;
}

void raise_index_errors(int device) {
  if (!has_index_error(device)) {
    return;
  }
  auto* h = existing_record(device);
  IndexErrorRecord e = *h;
  flag_of(h).store(0, std::memory_order_release);
  std::string index =
      e.is_uint64 ? std::to_string(static_cast<uint64_t>(e.index)) : std::to_string(e.index);
  throw_index_error(e.op ? e.op : "index", index, e.axis, e.size, e.slice);
}

}  // namespace mlx::core::cu
