// Every CUDA, cuBLAS and cuSOLVER call is checked: a failure raises an exception naming the
// call and the op being evaluated, never an abort.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "mlx/memory/memory.h"

namespace mlx::core::cu {

[[noreturn]] inline void throw_cuda_error(const char* call, const std::string& what) {
  const char* op = allocator::current_op();
  throw std::runtime_error(std::string("[CUDA] ") + call + " failed: " + what +
                           (op ? std::string(" (while evaluating ") + op + ")" : std::string()));
}

inline void check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear a non-sticky error so the process keeps working
    throw_cuda_error(call, cudaGetErrorString(err));
  }
}

inline void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw_cuda_error(call, cublasGetStatusString(status));
  }
}

// After a kernel launch: launch errors (bad configuration, no kernel image) surface here.
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace mlx::core::cu

#define MLX_CUDA_CHECK(call) ::mlx::core::cu::check((call), #call)
