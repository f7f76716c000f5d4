// Memory manager functions: usage, limits, cache and statistics.
#include "mlx/memory/memory.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include <set>
#include <stdexcept>
#include <string>

#include "mlx/backend/common/gpu_info.h"
#include "python/src/bindings.h"
#include "python/src/trees.h"

namespace nb = nanobind;
using namespace mlx::core;

void init_memory(nb::module_& m) {
  m.def("get_active_memory", &get_active_memory, "Bytes held by live arrays.");
  m.def("get_peak_memory", &get_peak_memory, "Largest active memory since the last reset.");
  m.def("reset_peak_memory", &reset_peak_memory,
        "Resets the peak memory (see get_peak_memory) to the current active memory.");
  m.def("get_cache_memory", &get_cache_memory, "Bytes held in the buffer cache for reuse.");
  m.def("set_memory_limit", &set_memory_limit, nb::arg("limit"),
        "Sets the memory limit in bytes; returns the previous one.");
  m.def("get_memory_limit", &get_memory_limit,
        "The memory limit in bytes: allocations beyond it first release the cache, then raise "
        "MemoryError. Default: the physical RAM.");
  m.def("set_cache_limit", &set_cache_limit, nb::arg("limit"),
        "Sets the buffer cache limit in bytes; returns the previous one.");
  m.def("get_cache_limit", &get_cache_limit,
        "The most bytes the buffer cache keeps for reuse (default: the memory limit).");
  m.def("set_wired_limit", &set_wired_limit, nb::arg("limit"),
        "Sets the wired (resident) memory limit in bytes and returns the previous one. Kept for "
        "MLX compatibility: this build has no wired memory, so it changes nothing else.");
  m.def("clear_cache", &clear_cache, "Returns cached buffers to the system.");
  m.def(
      "get_array_buffer_size",
      [](nb::args args) {
        // Each buffer once, however many arrays view it, at its allocated size.
        std::set<const void*> seen;
        size_t total = 0;
        for (const array& a : mlx::core::python::tree_flatten(args, false)) {
          if (!a.is_available()) {
            throw nb::value_error(
                "[get_array_buffer_size] Arrays must be evaluated first (call mx.eval).");
          }
          auto data = a.data_shared_ptr();
          if (data && seen.insert(data.get()).second) {
            total += a.buffer_size();
          }
        }
        return total;
      },
      "get_array_buffer_size(*args)\n\nThe bytes of the buffers behind the given arrays (each "
      "argument an array or a tree of arrays; other leaves are ignored). A buffer shared by "
      "several arrays (views) counts once, at its allocated size, which can exceed the arrays' "
      "nbytes. The arrays must be evaluated.\n\nReturns:\n    int");
  m.def("memory_stats", &memory_stats, "Allocator statistics as a dict.");
  m.def("reset_memory_stats", &reset_memory_stats,
        "Zeroes the allocator counters of memory_stats (allocations, frees, cache hits and misses, "
        "cumulative bytes) and resets the peak memory.");

  // mx.metal, as MLX exposes it where Metal is absent: not available, and its memory functions
  // act on this build's allocator (so programs written for Apple silicon keep working).
  nb::module_ metal = m.def_submodule(
      "metal",
      "Metal (Apple GPUs) is not available on Linux; the memory functions here act on "
      "this build's allocator, like their mx.* counterparts.");
  metal.def(
      "is_available", []() { return false; }, "Always False: Metal is not available on Linux.");
  metal.def("get_active_memory", &get_active_memory, "Same as :func:`mlx.core.get_active_memory`.");
  metal.def("get_peak_memory", &get_peak_memory, "Same as :func:`mlx.core.get_peak_memory`.");
  metal.def("reset_peak_memory", &reset_peak_memory, "Same as :func:`mlx.core.reset_peak_memory`.");
  metal.def("get_cache_memory", &get_cache_memory, "Same as :func:`mlx.core.get_cache_memory`.");
  metal.def("set_memory_limit", &set_memory_limit, nb::arg("limit"),
            "Same as :func:`mlx.core.set_memory_limit`.");
  metal.def("set_cache_limit", &set_cache_limit, nb::arg("limit"),
            "Same as :func:`mlx.core.set_cache_limit`.");
  metal.def("set_wired_limit", &set_wired_limit, nb::arg("limit"),
            "Same as :func:`mlx.core.set_wired_limit`.");
  metal.def("clear_cache", &clear_cache, "Same as :func:`mlx.core.clear_cache`.");
  metal.def(
      "device_info", []() { return nb::module_::import_("mlx.core").attr("device_info")(); },
      "Same as :func:`mlx.core.device_info` for the default device.");
  metal.def(
      "start_capture",
      [](const std::string& path) {
        throw std::runtime_error(
            "[metal.start_capture] Metal is not available, so there is "
            "no GPU trace to capture (path: " +
            path + ").");
      },
      nb::arg("path"), "Raises RuntimeError: Metal capture needs Metal.");
  metal.def(
      "stop_capture", []() {}, "Does nothing: no Metal capture can be running.");

  nb::module_ cuda = m.def_submodule("cuda", "The CUDA backend.");
  cuda.def(
      "is_available", []() { return mlx::core::gpu::is_available(); },
      "Whether this build has the CUDA backend and a usable NVIDIA GPU.");
}
