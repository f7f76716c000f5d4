// The CUDA runtime as kernels see it: the stream of the task being issued on this thread, the
// per-device resources (a transfer stream, the cuBLASLt handle, properties), and GPU streams.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace mlx::core::cu {

// The GPU stream whose task runs on this thread (set by the stream worker around each task).
struct CurrentStream {
  cudaStream_t stream = nullptr;
  uint64_t bit = 0;  // the stream's bit in a buffer's set of users
  int device = -1;
};
const CurrentStream& current();
void set_current(const CurrentStream& s);

// The CUDA stream kernels launch on: the current task's, or (outside tasks) the device's
// transfer stream.
cudaStream_t stream();

struct DeviceContext {
  int index = 0;
  cudaDeviceProp props{};
  cudaStream_t transfer = nullptr;  // copies issued outside GPU tasks
  size_t total_memory = 0;
  cublasLtHandle_t cublaslt();
  // What cuBLASLt asks for on Hopper.
  static constexpr size_t kCublasLtWorkspaceBytes = size_t(32) << 20;
  // cuBLASLt's workspace for products issued to `s` (kCublasLtWorkspaceBytes). Each CUDA
  // stream has its own: products of different streams run at once, and split-K keeps its
  // partial sums there.
  void* cublaslt_workspace(cudaStream_t s);

 private:
  std::once_flag cublaslt_once_;
  cublasLtHandle_t cublaslt_ = nullptr;
  std::mutex workspaces_mutex_;
  std::unordered_map<cudaStream_t, void*> workspaces_;  // never freed, as the streams
};
DeviceContext& device(int index = 0);
// Makes `index` the calling thread's CUDA device (once per thread).
void use_device(int index);
// The device whose work the calling thread issues: its task's; outside tasks 0 (whose transfer
// stream stream() returns there).
int current_device();
// Makes `index` the calling thread's device while it lives, then restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int index);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_;
};

// The CUDA stream that owns a bit and its device (for waits recorded against a buffer's
// users); a null stream for an unknown bit.
struct GpuStream {
  cudaStream_t stream = nullptr;
  int device = -1;
};
GpuStream stream_of_bit(uint64_t bit);
// Number of GPU streams created so far.
int num_gpu_streams();

}  // namespace mlx::core::cu
