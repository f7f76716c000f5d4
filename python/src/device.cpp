// Devices and streams: mx.Device, mx.cpu / mx.gpu, mx.Stream, default streams, synchronize.
#include "mlx/runtime/device.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>

#include <sstream>

#include "mlx/runtime/stream.h"
#include "python/src/bindings.h"

namespace nb = nanobind;
using namespace mlx::core;

namespace {

template <typename T>
std::string repr(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
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

  nb::class_<Stream>(m, "Stream", "An ordered queue of operations on a device.")
      .def_ro("device", &Stream::device)
      .def_ro("index", &Stream::index)
      .def("__repr__", &repr<Stream>)
      .def("__eq__", [](const Stream& a, const Stream& b) { return a == b; })
      .def("__eq__", [](const Stream&, nb::handle) { return false; })
      .def("__hash__", [](const Stream& s) { return s.index; });

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
  m.def("default_device", &default_device, "The device used when none is given.");
  m.def("set_default_device", &set_default_device, nb::arg("device"));
  m.def("is_available", &is_available, nb::arg("device"));
  m.def(
      "device_count", [](Device::DeviceType t) { return device_count(t); }, nb::arg("type"));
  m.def(
      "default_stream", [](const Device& d) { return default_stream(d); }, nb::arg("device"));
  m.def("set_default_stream", &set_default_stream, nb::arg("stream"));
  m.def(
      "new_stream", [](const Device& d) { return new_stream(d); }, nb::arg("device"));
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
