// Interchange with other array libraries: the buffer protocol of mx.array (its type slots).
#pragma once

#include <nanobind/nanobind.h>

// Py_bf_getbuffer / Py_bf_releasebuffer for nb::type_slots when mx.array is defined.
PyType_Slot* array_buffer_slots();
