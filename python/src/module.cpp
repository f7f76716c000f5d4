// The extension module mlx.core.
#include <nanobind/nanobind.h>

#include <limits>
#include <numbers>
#include <typeinfo>

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
    } catch (const std::bad_cast&) {
      // A conversion nanobind could not make must not surface as C++ text.
      PyErr_SetString(PyExc_TypeError, "An argument has a type that this function cannot take.");
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
  init_distributed(m);
  init_conv(m);
  init_fft(m);
  init_quantized(m);
  init_grouped_matmul(m);
  init_export(m);
  m.attr("__version__") = MLX_VERSION;
  // MLX's constants (floats, as Python's math module has them; newaxis is None as in NumPy).
  m.attr("e") = std::numbers::e;
  m.attr("pi") = std::numbers::pi;
  m.attr("euler_gamma") = std::numbers::egamma;
  m.attr("inf") = std::numeric_limits<double>::infinity();
  m.attr("nan") = std::numeric_limits<double>::quiet_NaN();
  m.attr("newaxis") = nb::none();
}
