// Interchange with other array libraries: the buffer protocol and DLPack export of mx.array,
// __array__ for NumPy, and mx.from_dlpack.
//
// mx.array(x) copies, as in MLX. mx.from_dlpack(x) shares host memory (the array API's default,
// copy=None): the shared memory is marked external, so no op writes into the producer's memory.
#include "python/src/interop.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <utility>
#include <vector>

#include "mlx/memory/memory.h"
#include "mlx/ops.h"
#include "mlx/utils.h"
#include "python/src/bindings.h"
#include "python/src/convert.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace {

// struct-module format of each dtype; bfloat16 has none.
const char* buffer_format(Dtype t) {
  switch (t) {
    case Dtype::Val::bool_:
      return "?";
    case Dtype::Val::uint8:
      return "B";
    case Dtype::Val::uint16:
      return "H";
    case Dtype::Val::uint32:
      return "I";
    case Dtype::Val::uint64:
      return "Q";
    case Dtype::Val::int8:
      return "b";
    case Dtype::Val::int16:
      return "h";
    case Dtype::Val::int32:
      return "i";
    case Dtype::Val::int64:
      return "q";
    case Dtype::Val::float16:
      return "e";
    case Dtype::Val::float32:
      return "f";
    case Dtype::Val::float64:
      return "d";
    case Dtype::Val::complex64:
      return "Zf";
    default:
      return nullptr;
  }
}

// What a Py_buffer points into, released with it.
struct Exported {
  array a;
  std::vector<Py_ssize_t> shape, strides;
};

int array_getbuffer(PyObject* self, Py_buffer* view, int flags) noexcept {
  try {
    array a = nb::cast<array>(nb::handle(self));
    const char* format = buffer_format(a.dtype());
    if (!format) {
      throw nb::buffer_error(
          "[array] bfloat16 has no buffer format; convert it first, e.g. "
          "a.astype(mx.float32).");
    }
    // A pending Ctrl-C stays pending: consumers such as NumPy discard buffer errors.
    eval_releasing_gil({a}, /* check_signals */ false);
    bool strided = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    bool dense = a.flags().row_contiguous;
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS) {
      dense = a.flags().col_contiguous;
    } else if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS) {
      dense = a.flags().row_contiguous || a.flags().col_contiguous;
    } else if (strided && (flags & PyBUF_C_CONTIGUOUS) != PyBUF_C_CONTIGUOUS) {
      dense = true;  // any strides will do
    }
    bool copied = false;
    if (!dense) {
      // A consumer that needs dense memory gets a read-only dense copy.
      if (flags & PyBUF_WRITABLE) {
        throw nb::buffer_error(
            msg("[array] A writable contiguous buffer was requested but the array (shape ",
                a.shape(), ") is not contiguous in memory.")
                .c_str());
      }
      a = contiguous(a);
      eval_releasing_gil({a}, false);
      copied = true;
    }
    auto* info = new Exported{a, {}, {}};
    for (int i = 0; i < a.ndim(); ++i) {
      info->shape.push_back(a.shape(i));
      info->strides.push_back(a.strides()[i] * static_cast<Py_ssize_t>(a.itemsize()));
    }
    view->obj = Py_NewRef(self);
    // Writes through a writable view land in the host copy, which becomes the only valid one.
    view->buf = copied ? const_cast<void*>(std::as_const(a).data<void>()) : a.data<void>();
    view->len = static_cast<Py_ssize_t>(a.nbytes());
    // Writable like MLX's: writes show in the array (and in arrays sharing its memory).
    view->readonly = copied;
    view->itemsize = static_cast<Py_ssize_t>(a.itemsize());
    view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(format) : nullptr;
    // Without PyBUF_ND the consumer sees plain bytes: one dimension, no shape.
    view->ndim = (flags & PyBUF_ND) ? a.ndim() : 1;
    view->shape = (flags & PyBUF_ND) ? info->shape.data() : nullptr;
    view->strides = strided ? info->strides.data() : nullptr;
    view->suboffsets = nullptr;
    view->internal = info;
    return 0;
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const out_of_memory& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const nb::builtin_exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  }
  view->obj = nullptr;
  return -1;
}

void array_releasebuffer(PyObject*, Py_buffer* view) noexcept {
  delete static_cast<Exported*>(view->internal);
}

// NumPy's __array__(dtype, copy) contract: copy=False never copies (ValueError when it would
// have to), copy=True always does, None copies only when needed.
nb::object to_numpy_array(const array& a, nb::handle dtype, std::optional<bool> copy) {
  if (copy == false && a.dtype() == bfloat16) {
    throw nb::value_error(
        "[array] bfloat16 arrays cannot be viewed by NumPy (it has no bfloat16); "
        "a float32 copy is needed.");
  }
  nb::object out = to_numpy(a);
  if (!dtype.is_none()) {
    nb::object wanted = nb::module_::import_("numpy").attr("dtype")(dtype);
    if (!out.attr("dtype").equal(wanted)) {
      if (copy == false) {
        throw nb::value_error(msg("[array] Converting ", a.dtype(),
                                  " to another NumPy dtype needs a copy (copy=False).")
                                  .c_str());
      }
      return out.attr("astype")(wanted);
    }
  }
  if (copy == true && a.dtype() != bfloat16) {
    return out.attr("copy")();
  }
  return out;
}

constexpr int kDLCPU = 1;

// A dense copy in memory of its own (the Copy op may share an already dense buffer).
array fresh_copy(const array& a) {
  array out = contiguous(a);
  eval_releasing_gil({out});
  if (out.data_shared_ptr() == a.data_shared_ptr()) {
    array mine(allocator::malloc(out.nbytes()), out.shape(), out.dtype());
    if (out.nbytes() > 0) {
      std::memcpy(mine.data<void>(), out.data<void>(), out.nbytes());
    }
    return mine;
  }
  return out;
}

nb::object dlpack(const array& self, nb::handle stream, nb::handle max_version,
                  nb::handle dl_device, std::optional<bool> copy) {
  if (!stream.is_none()) {
    throw nb::buffer_error(
        "[array.__dlpack__] Arrays live in host memory, which has no streams: "
        "stream must be None.");
  }
  if (!dl_device.is_none()) {
    auto [type, id] = nb::cast<std::pair<int, int>>(dl_device);
    if (type != kDLCPU || id != 0) {
      throw nb::buffer_error(msg("[array.__dlpack__] Only the CPU device (", kDLCPU,
                                 ", 0) is supported; got (", type, ", ", id, ").")
                                 .c_str());
    }
  }
  array a = self;
  eval_releasing_gil({a});
  if (copy == true) {
    a = fresh_copy(a);
  }
  // nanobind's array-API object implements the capsule protocol (versioned or not).
  nb::object nd = nb::ndarray<nb::array_api>(host_view(a)).cast();
  return nd.attr("__dlpack__")(nb::arg("max_version") = max_version);
}

array from_dlpack(nb::handle x, std::optional<bool> copy) {
  if (nb::isinstance<array>(x)) {
    array a = nb::cast<array>(x);
    return copy == true ? fresh_copy(a) : a;
  }
  if (!nb::hasattr(x, "__dlpack__")) {
    throw nb::type_error(msg("[from_dlpack] Expected an object with a __dlpack__ method; got ",
                             nb::cast<std::string>(nb::str(nb::handle(x.type()).attr("__name__"))),
                             ".")
                             .c_str());
  }
  nb::ndarray<nb::ro> nd;
  if (!nb::try_cast(x, nd)) {
    throw nb::type_error("[from_dlpack] The object's __dlpack__ export could not be read.");
  }
  if (copy != true) {
    if (auto shared = wrap_foreign(nd)) {
      return *shared;
    }
    if (copy == false) {
      throw nb::buffer_error(
          "[from_dlpack] copy=False, but the memory cannot be shared: it is not host memory, "
          "is misaligned, or holds complex128, which arrays lack.");
    }
  }
  return copy_foreign(nd);
}

// Binds `f` as method `name` of mx.array, defined in array.cpp.
template <typename Func, typename... Extra>
void def_array_method(const char* name, Func&& f, const Extra&... extra) {
  nb::handle cls = nb::type<array>();
  nb::setattr(cls, name,
              nb::cpp_function(std::forward<Func>(f), nb::is_method(), nb::name(name),
                               nb::scope(cls), extra...));
}

}  // namespace

PyType_Slot* array_buffer_slots() {
  static PyType_Slot slots[] = {
      {Py_bf_getbuffer, reinterpret_cast<void*>(array_getbuffer)},
      {Py_bf_releasebuffer, reinterpret_cast<void*>(array_releasebuffer)},
      {0, nullptr},
  };
  return slots;
}

void init_interop(nb::module_& m) {
  def_array_method("__array__", &to_numpy_array, nb::arg("dtype") = nb::none(),
                   nb::arg("copy") = nb::none(),
                   "A NumPy array viewing the array's memory (bfloat16 converts to float32).");
  def_array_method("__dlpack__", &dlpack, nb::arg("stream") = nb::none(),
                   nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
                   nb::arg("copy") = nb::none(),
                   "A DLPack capsule sharing the array's memory (a copy with copy=True).");
  def_array_method(
      "__dlpack_device__", [](const array&) { return nb::make_tuple(kDLCPU, 0); },
      "The DLPack device of the array: (1, 0), the CPU.");
  m.def("from_dlpack", &from_dlpack, nb::arg("x"), nb::kw_only(), nb::arg("copy") = nb::none(),
        "Creates an array from an object implementing __dlpack__ (its data is copied).");
}
