// Helpers shared by the transform bindings.
#pragma once

#include <nanobind/nanobind.h>

#include <functional>
#include <memory>
#include <vector>

namespace mlx::core::python {

// A Python object kept alive from C++ closures that graph nodes may hold: the reference is
// released under the GIL, whatever thread drops the last copy. Each share() is a reference of
// its own, invisible to Python's cycle collector (so the object stays alive while C++ uses it).
using SharedPy = std::shared_ptr<PyObject>;
SharedPy share(nanobind::handle obj);

// fun(*args, **kwargs); kwargs may be a null handle.
nanobind::object call(nanobind::handle fun, nanobind::handle args,
                      nanobind::handle kwargs = nanobind::handle());

// Type slots letting Python's cycle collector see the Python objects an instance of T holds
// (T::py_refs()): a transformed function refers to the Python function, whose globals often
// refer back to it. With `clear`, T::clear_refs() breaks such cycles.
template <typename T>
int traverse_refs(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nanobind::inst_ready(self)) {
    return 0;
  }
  for (nanobind::handle h : nanobind::inst_ptr<T>(self)->py_refs()) {
    Py_VISIT(h.ptr());
  }
  return 0;
}

template <typename T>
int clear_refs(PyObject* self) {
  nanobind::inst_ptr<T>(self)->clear_refs();
  return 0;
}

}  // namespace mlx::core::python

// mx.compile (python/src/compile.cpp), registered by init_transforms.
void init_compile(nanobind::module_& m);
