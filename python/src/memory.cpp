// Memory manager functions: usage, limits, cache and statistics.
#include "mlx/memory/memory.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include "python/src/bindings.h"

namespace nb = nanobind;
using namespace mlx::core;

void init_memory(nb::module_& m) {
  m.def("get_active_memory", &get_active_memory, "Bytes held by live arrays.");
  m.def("get_peak_memory", &get_peak_memory, "Largest active memory since the last reset.");
  m.def("reset_peak_memory", &reset_peak_memory);
  m.def("get_cache_memory", &get_cache_memory, "Bytes held in the buffer cache for reuse.");
  m.def("set_memory_limit", &set_memory_limit, nb::arg("limit"),
        "Sets the memory limit in bytes; returns the previous one.");
  m.def("get_memory_limit", &get_memory_limit);
  m.def("set_cache_limit", &set_cache_limit, nb::arg("limit"),
        "Sets the buffer cache limit in bytes; returns the previous one.");
  m.def("get_cache_limit", &get_cache_limit);
  m.def("set_wired_limit", &set_wired_limit, nb::arg("limit"));
  m.def("clear_cache", &clear_cache, "Returns cached buffers to the system.");
  m.def("memory_stats", &memory_stats, "Allocator statistics as a dict.");
  m.def("reset_memory_stats", &reset_memory_stats);
}
