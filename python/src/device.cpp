// Devices and streams: mx.Device, mx.cpu / mx.gpu, mx.Stream, default streams, synchronize.
#include "mlx/runtime/device.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "mlx/memory/memory.h"
#include "mlx/runtime/stream.h"
#include "python/src/bindings.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace mlx::core;

namespace {

template <typename T>
std::string repr(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string cpu_name() {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        return line.substr(line.find_first_not_of(' ', colon + 1));
      }
    }
  }
  return "cpu";
}

// mx.device_info: what is known about a device, by MLX's key names.
nb::dict device_info(const Device& d) {
  if (!is_available(d)) {
    throw nb::value_error("[device_info] The device is not available in this build.");
  }
  nb::dict info;
  if (d.type == Device::DeviceType::cpu) {
    info["device_name"] = cpu_name();
#if defined(__x86_64__)
    info["architecture"] = "x86_64";
#elif defined(__aarch64__)
    info["architecture"] = "aarch64";
#else
    info["architecture"] = "unknown";
#endif
    size_t pages = static_cast<size_t>(sysconf(_SC_PHYS_PAGES));
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    info["memory_size"] = pages * page;
    info["num_cores"] = static_cast<size_t>(std::thread::hardware_concurrency());
  } else {
    info["device_name"] = "gpu";
  }
  info["max_recommended_working_set_size"] = get_memory_limit();
  return info;
}

}  // namespace

void init_device(nb::module_& m) {
  nb::enum_<Device::DeviceType>(m, "DeviceType")
      .value("cpu", Device::DeviceType::cpu)
      .value("gpu", Device::DeviceType::gpu);
  m.attr("cpu") = m.attr("DeviceType").attr("cpu");
  m.attr("gpu") = m.attr("DeviceType").attr("gpu");

  nb::class_<Device>(m, "Device", "A device to run operations on.")
      .def(nb::init<Device::DeviceType, int>(), nb::arg("type"), nb::arg("index") = 0)
      .def_ro("type", &Device::type)
      .def_ro("index", &Device::index)
      .def("__repr__", &repr<Device>)
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__eq__", [](const Device& a, Device::DeviceType t) { return a.type == t; })
      .def("__eq__", [](const Device&, nb::handle) { return false; })
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1024 + d.index; });
  nb::implicitly_convertible<Device::DeviceType, Device>();

  nb::class_<ThreadLocalStream>(m, "ThreadLocalStream",
                                "A stream that stands for a separate stream in each thread that "
                                "uses it (see :func:`new_thread_local_stream`).")
      .def_ro("device", &ThreadLocalStream::device)
      .def("__repr__",
           [](const ThreadLocalStream& t) { return "ThreadLocalStream(" + repr(t.device) + ")"; });
  nb::class_<Stream>(m, "Stream", "An ordered queue of operations on a device.")
      // Anywhere a Stream is accepted, a ThreadLocalStream stands for the calling thread's one.
      .def("__init__",
           [](Stream* self, const ThreadLocalStream& t) {
             new (self) Stream(stream_from_thread_local_stream(t));
           })
      .def_ro("device", &Stream::device)
      .def_ro("index", &Stream::index)
      .def("__repr__", &repr<Stream>)
      .def("__eq__", [](const Stream& a, const Stream& b) { return a == b; })
      .def("__eq__", [](const Stream&, nb::handle) { return false; })
      .def("__hash__", [](const Stream& s) { return s.index; });
  nb::implicitly_convertible<ThreadLocalStream, Stream>();

  // mx.stream(s): a context manager making `s` (a Stream or a Device's default stream) the
  // default stream and device inside the block.
  struct StreamContext {
    Stream stream;
    std::optional<Device> saved_device;
    std::optional<Stream> saved_stream;
  };
  nb::class_<StreamContext>(m, "StreamContext")
      .def("__enter__",
           [](StreamContext& c) {
             c.saved_device = default_device();
             c.saved_stream = default_stream(c.stream.device);
             set_default_device(c.stream.device);
             set_default_stream(c.stream);
           })
      .def("__exit__", [](StreamContext& c, nb::args) {
        set_default_stream(*c.saved_stream);
        set_default_device(*c.saved_device);
      });
  m.def(
      "stream",
      [](std::variant<Stream, Device> s) {
        Stream st = std::holds_alternative<Stream>(s) ? std::get<Stream>(s)
                                                      : default_stream(std::get<Device>(s));
        return StreamContext{st, std::nullopt, std::nullopt};
      },
      nb::arg("s"), "Context manager that runs the block's operations on a stream or device.");
  m.def(
      "new_thread_local_stream", [](const Device& d) { return new_thread_local_stream(d); },
      "device"_a,
      "new_thread_local_stream(device)\n\nA stream on ``device`` that gives each thread its own "
      "stream, created the first time that thread uses it. Pass it as ``stream=`` anywhere a "
      "stream is accepted.\n\nReturns:\n    ThreadLocalStream");
  m.def(
      "new_thread_unsafe_stream", [](const Device& d) { return new_stream(d); }, "device"_a,
      "new_thread_unsafe_stream(device)\n\nA new stream on ``device`` for use from one thread "
      "at a time (every stream of this build may be used from any thread, so this is "
      ":func:`new_stream`).");
  m.def(
      "clear_streams",
      []() {
        nb::gil_scoped_release release;
        synchronize();
      },
      "clear_streams()\n\nFinishes the work queued on every stream. Streams stay valid: their "
      "worker threads are kept for reuse.");
  m.def(
      "device_info",
      [](std::optional<std::variant<Device, Device::DeviceType>> d) {
        Device dev = !d ? default_device()
                     : std::holds_alternative<Device>(*d)
                         ? std::get<Device>(*d)
                         : Device(std::get<Device::DeviceType>(*d));
        return device_info(dev);
      },
      "d"_a = nb::none(),
      "device_info(d=None)\n\nInformation about a device (default: the default device) as a "
      "dict: ``device_name``, ``architecture``, ``memory_size`` (bytes of RAM), ``num_cores`` and "
      "``max_recommended_working_set_size`` (the memory limit) for the CPU.");
  m.def("default_device", &default_device, "The device used when none is given.");
  m.def("set_default_device", &set_default_device, nb::arg("device"),
        "Makes ``device`` the default device of the calling thread (ops without a stream run on "
        "its default stream).");
  m.def("is_available", &is_available, nb::arg("device"),
        "Whether ``device`` can run operations in this build and on this machine.");
  m.def(
      "device_count", [](Device::DeviceType t) { return device_count(t); }, nb::arg("device_type"),
      "The number of devices of a type (0 GPUs in a build without one).");
  m.def(
      "default_stream", [](const Device& d) { return default_stream(d); }, nb::arg("device"),
      "The default stream of ``device`` for the calling thread.");
  m.def("set_default_stream", &set_default_stream, nb::arg("stream"),
        "Makes ``stream`` the default stream of its device for the calling thread.");
  m.def(
      "new_stream", [](const Device& d) { return new_stream(d); }, nb::arg("device"),
      "A new stream on ``device``: operations on different streams may run concurrently, and "
      "dependencies between them are respected.");
  m.def(
      "synchronize",
      [](std::optional<Stream> s) {
        nb::gil_scoped_release release;
        if (s) {
          synchronize(*s);
        } else {
          synchronize();
        }
      },
      nb::arg("stream") = nb::none(), "Waits for the stream's (default: every stream's) work.");
}
