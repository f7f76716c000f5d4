// Memory manager functions: usage, limits, cache and statistics.
#include "mlx/memory/memory.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <set>
#include <stdexcept>
#include <string>

#include "mlx/backend/common/gpu_info.h"
#include "python/src/bindings.h"
#include "python/src/trees.h"

namespace nb = nanobind;
using namespace mlx::core;

namespace {

// A device argument of the memory functions: None (every device), a name ("cpu", "cuda:1";
// "cuda" is "cuda:0"), mx.cpu / mx.gpu (GPU 0) or an mx.Device (its GPU's allocator).
std::string device_name(const nb::object& device, const char* fn) {
  if (device.is_none()) {
    return "";
  }
  if (nb::isinstance<nb::str>(device)) {
    return nb::cast<std::string>(device);
  }
  bool is_type = nb::isinstance<Device::DeviceType>(device);
  if (is_type || nb::isinstance<Device>(device)) {
    Device d = is_type ? Device(nb::cast<Device::DeviceType>(device)) : nb::cast<Device>(device);
    if (d.type == Device::cpu) {
      return "cpu";
    }
    if (memory_devices().size() < 2) {
      throw std::invalid_argument(std::string("[") + fn + "] The GPU has no allocator here.");
    }
    return "cuda:" + std::to_string(d.index);
  }
  throw nb::type_error(
      (std::string("[") + fn + "] device must be None, a str, mx.cpu / mx.gpu or an mx.Device.")
          .c_str());
}

nb::dict policy_dict(const allocator::CachePolicy& p) {
  nb::dict d;
  d["page_size"] = p.page_size;
  d["trim_bytes"] = p.trim_bytes;
  d["max_cache"] = p.max_cache;
  d["adaptive"] = p.adaptive;
  d["idle_seconds"] = p.idle_seconds;
  return d;
}

}  // namespace

void init_memory(nb::module_& m) {
  m.def("get_active_memory", &get_active_memory, "Bytes held by live arrays.");
  m.def("get_peak_memory", &get_peak_memory, "Largest active memory since the last reset.");
  m.def("reset_peak_memory", &reset_peak_memory,
        "Resets the peak memory (see get_peak_memory) to the current active memory.");
  m.def("get_cache_memory", &get_cache_memory, "Bytes held in the buffer cache for reuse.");
  m.def("set_memory_limit", &set_memory_limit, nb::arg("limit"),
        "Sets the memory limit in bytes, on each device (host, each GPU); returns the previous "
        "one.");
  m.def("get_memory_limit", &get_memory_limit,
        "The memory limit in bytes: allocations beyond it first release the cache, then raise "
        "MemoryError. Default: the physical RAM.");
  m.def("set_cache_limit", &set_cache_limit, nb::arg("limit"),
        "Sets the buffer cache limit in bytes, on each device; returns the previous one.");
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
  m.def(
      "memory_stats",
      [](const nb::object& device) { return memory_stats(device_name(device, "memory_stats")); },
      nb::arg("device") = nb::none(),
      "memory_stats(device=None)\n\nAllocator statistics as a dict, of every device together "
      "(device=None: sums, with the peak of the sums) or of one ('cpu', 'cuda:0', 'cuda:1', "
      "...; 'cuda' is 'cuda:0'; or an mx.Device). Keys: active_memory, peak_memory (peak of active "
      "bytes), cache_memory, footprint and peak_footprint (active + cache: what the process "
      "holds), memory_limit, "
      "cache_limit, num_system_allocs, num_system_frees, cache_hits, cache_misses, hit_rate "
      "(= cache_hit_rate), num_retries (system allocations retried after releasing the cache), "
      "num_ooms, active_requested, total_requested, total_handed_out, fragmentation "
      "(= fragmentation_rate: 1 - requested / handed out).");
  m.def("memory_devices", &memory_devices,
        "The devices that have an allocator: 'cpu', then 'cuda:0', 'cuda:1', ... (one per GPU).");
  nb::class_<MemoryInfo>(m, "MemoryInfo", "Memory use of the allocators (see memory_info).")
      .def_ro("used", &MemoryInfo::used, "Bytes held: active + cache.")
      .def_ro("total", &MemoryInfo::total, "The memory of the devices (physical RAM, GPUs).")
      .def_ro("active", &MemoryInfo::active, "Bytes of live arrays.")
      .def_ro("cache", &MemoryInfo::cache, "Bytes kept for reuse.")
      .def_ro("limit", &MemoryInfo::limit, "The memory limit.")
      .def("__repr__", [](const MemoryInfo& i) {
        return "MemoryInfo(used=" + std::to_string(i.used) + ", total=" + std::to_string(i.total) +
               ", active=" + std::to_string(i.active) + ", cache=" + std::to_string(i.cache) +
               ", limit=" + std::to_string(i.limit) + ")";
      });
  m.def(
      "memory_info",
      [](const nb::object& device) { return memory_info(device_name(device, "memory_info")); },
      nb::arg("device") = nb::none(),
      "memory_info(device=None)\n\nUsed and total memory: .used (active + cache), .total, "
      ".active, .cache, .limit; of every device or of one.");
  m.def("set_memory_pool_limit", &set_memory_pool_limit, nb::arg("fraction"),
        "set_memory_pool_limit(fraction)\n\nSets each device's memory limit to `fraction` "
        "(0 < fraction <= 1) of its memory (RAM for the host); returns the previous limit.");
  m.def(
      "set_cache_policy",
      [](std::optional<std::string> preset, std::optional<nb::object> page_size,
         std::optional<nb::object> trim_bytes, std::optional<nb::object> max_cache,
         std::optional<bool> adaptive, std::optional<double> idle_seconds) {
        allocator::CachePolicy old = get_cache_policy();
        allocator::CachePolicy p = preset ? allocator::cache_policy_preset(*preset) : old;
        auto bytes = [](const nb::object& v, const char* what) {
          return nb::isinstance<nb::str>(v) ? allocator::parse_bytes(nb::cast<std::string>(v), what)
                                            : nb::cast<size_t>(v);
        };
        if (page_size)
          p.page_size = bytes(*page_size, "page_size");
        if (trim_bytes)
          p.trim_bytes = bytes(*trim_bytes, "trim_bytes");
        if (max_cache)
          p.max_cache = bytes(*max_cache, "max_cache");
        if (adaptive)
          p.adaptive = *adaptive;
        if (idle_seconds)
          p.idle_seconds = *idle_seconds;
        if (preset && p.max_cache == 0) {
          p.max_cache = get_memory_limit();  // a preset without a cache size: the default's
        }
        set_cache_policy(p);
        return policy_dict(old);
      },
      nb::arg("preset") = nb::none(), nb::kw_only(), nb::arg("page_size") = nb::none(),
      nb::arg("trim_bytes") = nb::none(), nb::arg("max_cache") = nb::none(),
      nb::arg("adaptive") = nb::none(), nb::arg("idle_seconds") = nb::none(),
      "set_cache_policy(preset=None, *, page_size=None, trim_bytes=None, max_cache=None, "
      "adaptive=None, idle_seconds=None)\n\nSets the buffer cache policy of every device, "
      "starting from a preset ('default', 'throughput_training', 'low_latency_inference', "
      "'distributed_training', 'adaptive') or from the current policy. page_size: sizes round "
      "to whole pages and a cached block may exceed a request by max(page, size/4); trim_bytes: "
      "bytes freed at once when the cache must shrink; max_cache: the cache limit; adaptive: "
      "size classes picked from the observed request sizes; idle_seconds: cached blocks unused "
      "this long go back to the system (0: never). Byte values take ints or strings such as "
      "'64M'. The environment sets the same: MLX_CACHE_POLICY, MLX_CACHE_PAGE_SIZE, "
      "MLX_CACHE_TRIM_BYTES, MLX_CACHE_MAX_BYTES, MLX_CACHE_ADAPTIVE, MLX_CACHE_IDLE_SECONDS. "
      "Returns the previous policy as a dict.");
  m.def(
      "get_cache_policy", []() { return policy_dict(get_cache_policy()); },
      "The buffer cache policy as a dict (see set_cache_policy).");
  m.def("cache_policy_presets", &allocator::cache_policy_presets,
        "The names set_cache_policy accepts as presets.");
  m.def(
      "set_env",
      [](const std::string& name, const nb::object& value) {
        std::string v = nb::cast<std::string>(nb::str(value));
        set_env(name, v);  // validates first: a bad value changes nothing
        nb::module_::import_("os").attr("environ")[name.c_str()] = v;
      },
      nb::arg("name"), nb::arg("value"),
      "set_env(name, value)\n\nSets an environment variable of this process (os.environ too) "
      "and applies the memory settings at once: MLX_MEMORY_DEBUG and MLX_CACHE_DEBUG switch the "
      "allocator logs on or off, MLX_CACHE_POLICY and MLX_CACHE_* change the cache policy.");
  m.def(
      "__getattr__",
      [](const std::string& name) -> nb::object {
        if (name == "memory") {  // mx.memory is the Python module mlx.memory, loaded on use
          nb::object mod = nb::module_::import_("mlx.memory");
          nb::module_::import_("mlx.core").attr("memory") = mod;
          return mod;
        }
        throw nb::attribute_error(("module 'mlx.core' has no attribute '" + name + "'").c_str());
      },
      nb::arg("name"));
  init_memory_trace(m);
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
