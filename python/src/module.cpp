// The extension module mlx.core.
#include <nanobind/nanobind.h>

#include "mlx/memory/memory.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

NB_MODULE(core, m) {
  m.doc() = "mlx.core: lazy arrays, ops, transforms and devices.";
#ifdef NDEBUG
  // Other extensions (PyTorch, for one) can keep our objects alive until after nanobind's
  // shutdown check, which would then print leak reports to users; debug builds keep them.
  nb::set_leak_warnings(false);
#endif
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const mlx::core::out_of_memory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });
  init_dtypes(m);
  init_device(m);
  init_array(m);
  init_ops(m);
  init_memory(m);
  init_indexing(m);
  init_transforms(m);
  init_random(m);
  init_fast(m);
  init_interop(m);
  init_io(m);
  init_linalg(m);
  init_conv(m);
  init_fft(m);
  init_quantized(m);
  m.attr("__version__") = MLX_VERSION;
}
