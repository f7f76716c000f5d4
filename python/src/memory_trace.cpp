// Bindings behind mx.memory (python/mlx/memory.py): starting and stopping allocation traces,
// capturing the Python stack that creates an op, and snapshots of the live blocks.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "mlx/array.h"
#include "mlx/memory/caching_allocator.h"
#include "mlx/memory/residency.h"
#include "mlx/memory/trace.h"
#include "python/src/bindings.h"

namespace nb = nanobind;
using namespace mlx::core;
namespace trace = mlx::core::allocator::trace;

namespace {

constexpr size_t kMaxFrames = 32;

// Interned stacks: a stack is a list of (code object, line), innermost first. The GIL guards
// the table: stacks are captured and read only by threads that hold it.
struct StackTable {
  std::vector<std::vector<std::pair<PyObject*, int>>> stacks;  // id - 1
  std::unordered_map<std::string, uint32_t> ids;
};
StackTable& stack_table() {
  static auto* t = new StackTable();  // leaked: holds references the interpreter may outlive
  return *t;
}

// The calling thread's Python stack as an interned id (0 without the GIL). Allocates nothing
// from the mlx allocators, so it may run wherever an allocation is being prepared.
uint32_t capture_stack() {
  if (!Py_IsInitialized() || !PyGILState_Check()) {
    return 0;
  }
  PyObject* frame = reinterpret_cast<PyObject*>(PyEval_GetFrame());
  if (frame == nullptr) {
    return 0;
  }
  Py_INCREF(frame);
  std::vector<std::pair<PyObject*, int>> frames;
  while (frame != nullptr && frame != Py_None && frames.size() < kMaxFrames) {
    PyObject* code = PyObject_GetAttrString(frame, "f_code");
    PyObject* line = PyObject_GetAttrString(frame, "f_lineno");
    PyObject* back = PyObject_GetAttrString(frame, "f_back");
    Py_DECREF(frame);
    frame = back;
    if (code == nullptr || line == nullptr) {
      Py_XDECREF(code);
      Py_XDECREF(line);
      PyErr_Clear();
      break;
    }
    long lineno = line == Py_None ? -1 : PyLong_AsLong(line);
    Py_DECREF(line);
    frames.emplace_back(code, static_cast<int>(lineno));
  }
  Py_XDECREF(frame);
  PyErr_Clear();
  // The key from the fields alone (a pair's padding bytes are not part of its value).
  std::string key;
  key.reserve(frames.size() * (sizeof(PyObject*) + sizeof(int)));
  for (auto& [code, line] : frames) {
    key.append(reinterpret_cast<const char*>(&code), sizeof(code));
    key.append(reinterpret_cast<const char*>(&line), sizeof(line));
  }
  auto& t = stack_table();
  auto it = t.ids.find(key);
  if (it != t.ids.end()) {
    for (auto& [code, _] : frames) {
      Py_DECREF(code);
    }
    return it->second;
  }
  t.stacks.push_back(std::move(frames));  // keeps the code objects
  uint32_t id = static_cast<uint32_t>(t.stacks.size());
  t.ids.emplace(std::move(key), id);
  return id;
}

nb::list stack_frames(uint32_t id) {
  nb::list out;
  auto& t = stack_table();
  if (id == 0 || id > t.stacks.size()) {
    return out;
  }
  for (auto& [code, line] : t.stacks[id - 1]) {
    nb::handle c(code);
    out.append(nb::make_tuple(c.attr("co_filename"), line, c.attr("co_name")));
  }
  return out;
}

const char* kind_name(trace::Kind k) {
  switch (k) {
    case trace::Kind::alloc:
      return "alloc";
    case trace::Kind::free:
      return "free";
    case trace::Kind::segment_alloc:
      return "segment_alloc";
    case trace::Kind::segment_free:
      return "segment_free";
    case trace::Kind::retry:
      return "retry";
    case trace::Kind::oom:
      return "oom";
  }
  return "?";
}

nb::object str_or_none(const char* s) { return s ? nb::object(nb::str(s)) : nb::none(); }

}  // namespace

void init_memory_trace(nb::module_& m) {
  nb::module_ t = m.def_submodule(
      "_memory", "Internals of mx.memory (allocation traces, stacks, snapshots); use mx.memory.");
  t.def(
      "start_trace",
      [](bool stacks, size_t max_events) {
        trace::start(stacks ? capture_stack : nullptr, max_events);
      },
      nb::arg("stacks") = false, nb::arg("max_events") = 0,
      "Starts recording allocator events (discarding earlier ones); max_events > 0 keeps only "
      "the latest that many.");
  t.def("is_tracing", []() { return trace::enabled(); });
  t.def(
      "stop_trace",
      []() {
        std::vector<trace::Event> events = trace::stop();
        nb::list out;
        for (auto& e : events) {
          out.append(nb::make_tuple(e.seq, e.time_ns, kind_name(e.kind),
                                    reinterpret_cast<uintptr_t>(e.address), e.size, e.requested,
                                    str_or_none(e.op), str_or_none(e.device), e.stack, e.stream,
                                    e.cached, e.active, e.cache));
        }
        return out;
      },
      "Stops the trace; returns its events as tuples (seq, time_ns, kind, address, size, "
      "requested, op, device, stack, stream, cached, active, cache).");
  t.def("stack_frames", &stack_frames, nb::arg("stack"),
        "The frames (filename, line, name) of an interned stack, innermost first.");
  t.def(
      "block_addresses",
      [](const array& a) {
        auto [host, device] = a.block_addresses();
        return nb::make_tuple(reinterpret_cast<uintptr_t>(host),
                              reinterpret_cast<uintptr_t>(device));
      },
      nb::arg("a"), "The (host, device) allocator blocks behind an array's buffer (0: none).");
  t.def(
      "snapshot",
      []() {
        nb::list out;
        allocator::release_finished_gpu_frees();  // settled frees are not live
        for (auto* a : allocator::CachingAllocator::all()) {
          allocator::AllocatorSnapshot s = a->snapshot();
          nb::list live, cached;
          for (auto& b : s.live) {
            live.append(nb::make_tuple(reinterpret_cast<uintptr_t>(b.address), b.size, b.requested,
                                       str_or_none(b.op), b.stack, b.stream, b.serial));
          }
          for (auto& [ptr, size] : s.cached) {
            cached.append(nb::make_tuple(reinterpret_cast<uintptr_t>(ptr), size));
          }
          nb::dict d;
          d["device"] = s.device;
          d["live"] = live;
          d["cached"] = cached;
          d["next_serial"] = s.next_serial;
          out.append(d);
        }
        return out;
      },
      "Per allocator: device, live blocks (address, size, requested, op, stack, stream, serial), "
      "cached blocks (address, size) and the serial of the next allocation.");
}
