#include <dlfcn.h>

#include <stdexcept>

#include "mlx/distributed/communicator.h"

namespace mlx::core::distributed::detail {

bool nccl_available() {
  static bool found = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL) != nullptr;
  return found;
}

std::shared_ptr<Communicator> nccl_init(bool strict) {
  if (strict) {
    throw std::runtime_error("[distributed.init] The NCCL backend is not available.");
  }
  return nullptr;
}

}  // namespace mlx::core::distributed::detail
