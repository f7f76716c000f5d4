#include <cuda_runtime.h>

#include "mlx/backend/common/gpu_info.h"

namespace mlx::core::gpu {

int device_count() {
  static int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // no driver or no device: the library still works on the CPU
      return 0;
    }
    return n;
  }();
  return count;
}

bool is_available() { return device_count() > 0; }

}  // namespace mlx::core::gpu
