// Without a GPU every buffer lives on the host: nothing ever asks for device memory or a GPU
// stream (no GPU stream can be created), so reaching these is a logic error.
#include "mlx/memory/residency.h"

#include <stdexcept>

#include "mlx/runtime/device_stream.h"

namespace mlx::core {

namespace {
[[noreturn]] void no_gpu(const char* what) {
  throw std::logic_error(std::string("[") + what + "] No GPU backend in this build.");
}
}  // namespace

namespace allocator {
Buffer gpu_malloc(size_t) { no_gpu("gpu_malloc"); }
void gpu_free(Buffer, uint64_t) { no_gpu("gpu_free"); }
void copy_to_host(void*, const void*, size_t) { no_gpu("copy_to_host"); }
void copy_to_device(void*, const void*, size_t) { no_gpu("copy_to_device"); }
uint64_t current_gpu_stream_bit() { return 0; }
void init_gpu_allocator() {}
void release_finished_gpu_frees() {}
}  // namespace allocator

std::unique_ptr<DeviceStream> make_gpu_stream(const Stream&) { no_gpu("new_stream"); }

}  // namespace mlx::core
