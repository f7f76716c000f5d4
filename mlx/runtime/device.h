#pragma once

#include <ostream>

namespace mlx::core {

struct Device {
  enum class DeviceType { cpu, gpu };
  static constexpr DeviceType cpu = DeviceType::cpu;
  static constexpr DeviceType gpu = DeviceType::gpu;

  constexpr Device(DeviceType type, int index = 0) : type(type), index(index) {}

  DeviceType type;
  int index;
};

inline bool operator==(const Device& a, const Device& b) {
  return a.type == b.type && a.index == b.index;
}
inline bool operator!=(const Device& a, const Device& b) { return !(a == b); }
std::ostream& operator<<(std::ostream& os, const Device& d);

// The default device of the calling thread (the GPU when one is available).
const Device& default_device();
void set_default_device(const Device& d);
bool is_available(const Device& d);
int device_count(Device::DeviceType type);

}  // namespace mlx::core
