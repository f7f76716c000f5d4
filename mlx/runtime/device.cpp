#include "mlx/runtime/device.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "mlx/backend/common/gpu_info.h"

namespace mlx::core {

namespace {
// The GPU when there is one, as in MLX; MLX_DEFAULT_DEVICE=cpu or =gpu chooses explicitly
// (the test suites run on either device with one switch).
Device initial_default_device() {
  const char* env = std::getenv("MLX_DEFAULT_DEVICE");
  if (env != nullptr && std::string(env) == "cpu") {
    return Device(Device::cpu);
  }
  if (env != nullptr && std::string(env) == "gpu" && !gpu::is_available()) {
    throw std::runtime_error("MLX_DEFAULT_DEVICE=gpu, but no GPU is available.");
  }
  return gpu::is_available() ? Device(Device::gpu) : Device(Device::cpu);
}
thread_local Device tls_default_device = initial_default_device();
}  // namespace

std::ostream& operator<<(std::ostream& os, const Device& d) {
  return os << "Device(" << (d.type == Device::cpu ? "cpu" : "gpu") << ", " << d.index << ")";
}

const Device& default_device() { return tls_default_device; }

void set_default_device(const Device& d) {
  if (!is_available(d)) {
    throw std::invalid_argument(d.type == Device::gpu
                                    ? "[set_default_device] No GPU is available."
                                    : "[set_default_device] Invalid CPU device index.");
  }
  tls_default_device = d;
}

bool is_available(const Device& d) {
  if (d.type == Device::cpu) {
    return d.index == 0;
  }
  return gpu::is_available() && d.index >= 0 && d.index < gpu::device_count();
}

int device_count(Device::DeviceType type) {
  return type == Device::cpu ? 1 : (gpu::is_available() ? gpu::device_count() : 0);
}

}  // namespace mlx::core
