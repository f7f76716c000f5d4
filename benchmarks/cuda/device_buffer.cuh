// What the standalone kernel harnesses (benchmarks/cuda/*.cu) share: CUDA error checks and a
// device buffer that uploads host vectors and downloads as float64.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

namespace harness {

// Exits with status 2 on a CUDA error, naming `what`.
inline void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("CUDA error in %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

template <typename T>
inline double to_double(T v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
inline T from_double(double v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// A device copy of a host vector (or `n` uninitialised elements).
template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    cuda_ok(cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  explicit DeviceBuffer(const std::vector<T>& h) : DeviceBuffer(h.size()) {
    cuda_ok(cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::vector<double> download() const {
    std::vector<T> h(n);
    cuda_ok(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    std::vector<double> out(n);
    std::transform(h.begin(), h.end(), out.begin(), to_double<T>);
    return out;
  }
};

}  // namespace harness
