#include "python/src/convert.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "mlx/ops.h"
#include "mlx/primitives/shape.h"
#include "mlx/runtime/eval.h"
#include "mlx/utils.h"

namespace nb = nanobind;

namespace mlx::core::python {

namespace {

Dtype int_dtype(int64_t v) {
  return v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min() ? int64
                                                                                            : int32;
}

// A Python int as int64; OverflowError (not C++ cast text) when it does not fit.
int64_t int_value(nb::handle obj) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
  if (overflow != 0) {
    throw std::overflow_error(
        msg("Python integer ", nb::cast<std::string>(nb::str(obj)),
            " is out of the range of 64-bit integers, the widest integer type of arrays."));
  }
  if (v == -1 && PyErr_Occurred()) {
    throw nb::python_error();
  }
  return static_cast<int64_t>(v);
}

// A Python scalar as an array of its natural dtype (or `dtype`).
std::optional<array> scalar_to_array(nb::handle obj, std::optional<Dtype> dtype) {
  if (nb::isinstance<nb::bool_>(obj)) {
    return array(nb::cast<bool>(obj), dtype.value_or(bool_));
  }
  // Converted here, on the host, to the dtype asked for: an AsType node would cost a kernel
  // (and on the GPU a copy of the scalar to the device) for each `x * 0.5` on bfloat16 data.
  if (nb::isinstance<nb::int_>(obj)) {
    int64_t v = int_value(obj);
    return array(v, dtype.value_or(int_dtype(v)));
  }
  if (nb::isinstance<nb::float_>(obj)) {
    double v = nb::cast<double>(obj);
    Dtype t = dtype.value_or(float32);
    return t == float64 ? array(v, float64) : array(static_cast<float>(v), t);
  }
  if (PyComplex_Check(obj.ptr())) {
    std::complex<float> v(PyComplex_RealAsDouble(obj.ptr()), PyComplex_ImagAsDouble(obj.ptr()));
    return array(v, dtype.value_or(complex64));
  }
  return std::nullopt;
}

// Shape and leaf kinds of a nested list of Python scalars; false when a leaf is not a scalar.
struct ListInfo {
  Shape shape;
  bool any_float = false, any_int = false, any_complex = false, any_bool = false;
  int64_t min_int = 0, max_int = 0;
};

bool scan_list(nb::handle obj, size_t depth, ListInfo& info) {
  if (nb::isinstance<nb::list>(obj) || nb::isinstance<nb::tuple>(obj)) {
    size_t n = nb::len(obj);
    if (depth == info.shape.size()) {
      info.shape.push_back(static_cast<int32_t>(n));
    } else if (depth > info.shape.size() || info.shape[depth] != static_cast<int32_t>(n)) {
      throw std::invalid_argument("[array] Initialization list is not rectangular.");
    }
    for (nb::handle item : obj) {
      if (!scan_list(item, depth + 1, info)) {
        return false;
      }
    }
    return true;
  }
  if (depth != info.shape.size()) {
    throw std::invalid_argument("[array] Initialization list is not rectangular.");
  }
  if (nb::isinstance<nb::bool_>(obj)) {
    info.any_bool = true;
  } else if (nb::isinstance<nb::int_>(obj)) {
    int64_t v = int_value(obj);
    info.min_int = info.any_int ? std::min(info.min_int, v) : v;
    info.max_int = info.any_int ? std::max(info.max_int, v) : v;
    info.any_int = true;
  } else if (nb::isinstance<nb::float_>(obj)) {
    info.any_float = true;
  } else if (PyComplex_Check(obj.ptr())) {
    info.any_complex = true;
  } else {
    return false;
  }
  return true;
}

template <typename T>
void flatten_list(nb::handle obj, std::vector<T>& out) {
  if (nb::isinstance<nb::list>(obj) || nb::isinstance<nb::tuple>(obj)) {
    for (nb::handle item : obj) {
      flatten_list(item, out);
    }
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    out.push_back(
        std::complex<float>(PyComplex_RealAsDouble(obj.ptr()), PyComplex_ImagAsDouble(obj.ptr())));
  } else {
    out.push_back(nb::cast<T>(obj));
  }
}

array list_to_array(nb::handle obj, std::optional<Dtype> dtype) {
  ListInfo info;
  if (!scan_list(obj, 0, info)) {
    // Lists holding arrays (or array-likes): convert each element and stack.
    std::vector<array> parts;
    for (nb::handle item : obj) {
      parts.push_back(array_from_python(item, dtype));
    }
    if (parts.empty()) {
      return array(Shape{0}, dtype.value_or(float32), nullptr, {});
    }
    return stack(parts, 0);
  }
  if (info.any_complex) {
    std::vector<std::complex<float>> v;
    flatten_list(obj, v);
    return array(v.data(), info.shape, dtype.value_or(complex64));
  }
  if (info.any_float) {
    std::vector<double> v;
    flatten_list(obj, v);
    return array(v.data(), info.shape, dtype.value_or(float32));
  }
  if (info.any_int) {
    std::vector<int64_t> v;
    flatten_list(obj, v);
    Dtype natural = std::max(int_dtype(info.min_int), int_dtype(info.max_int),
                             [](Dtype a, Dtype b) { return a.size < b.size; });
    return array(v.data(), info.shape, dtype.value_or(natural));
  }
  std::vector<uint8_t> v;
  flatten_list(obj, v);
  // The leaves are bools (0 or 1), or there are none.
  return array(v.data(), info.shape, dtype.value_or(info.any_bool ? bool_ : float32));
}

// An array viewing the memory of a foreign host array, with its strides. The memory is marked
// external, so no op writes into it; `release` runs once no array views it. A misaligned buffer
// is seen as bytes (uint8 with a trailing axis of `item` bytes) since kernels load whole
// elements.
array view_foreign(const nb::ndarray<nb::ro>& nd, Dtype storage, int trailing, Deleter release) {
  Shape shape;
  Strides strides;
  for (size_t i = 0; i < nd.ndim(); ++i) {
    shape.push_back(static_cast<int32_t>(nd.shape(i)));
    strides.push_back(nd.stride(i) * trailing);
  }
  if (trailing > 1) {
    shape.push_back(trailing);
    strides.push_back(1);
  }
  array out(shape, storage, nullptr, {});
  out.set_external_data(const_cast<void*>(nd.data()), span_for_layout(shape, strides), strides,
                        flags_for_layout(shape, strides), std::move(release));
  return out;
}

// Zero-copy imports hold the producer's ndarray handle; dropping it needs the GIL. Arrays die on
// any thread (eval workers too) and such a thread must not wait for the GIL (its holder may be
// waiting for that thread), so releases on threads without the GIL queue up and run on the main
// thread through Py_AddPendingCall.
struct PendingReleases {
  std::mutex mutex;
  std::vector<nb::ndarray<nb::ro>*> handles;
  bool scheduled = false;
};

PendingReleases& pending_releases() {
  static auto* p = new PendingReleases();  // leaked: arrays may die during static destruction
  return *p;
}

int drain_pending_releases(void*) {
  auto& p = pending_releases();
  std::vector<nb::ndarray<nb::ro>*> handles;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    handles.swap(p.handles);
    p.scheduled = false;
  }
  for (auto* h : handles) {
    delete h;
  }
  return 0;
}

void release_foreign(nb::ndarray<nb::ro>* handle) {
  if (!Py_IsInitialized()) {
    return;  // the interpreter is gone; so is the producer
  }
  if (PyGILState_Check()) {
    delete handle;
    return;
  }
  auto& p = pending_releases();
  bool schedule;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    p.handles.push_back(handle);
    schedule = !p.scheduled;
    p.scheduled = true;
  }
  if (schedule && Py_AddPendingCall(drain_pending_releases, nullptr) != 0) {
    std::lock_guard<std::mutex> lock(p.mutex);
    p.scheduled = false;  // the interpreter's queue is full: the next release retries
  }
}

bool row_contiguous(const nb::ndarray<nb::ro>& nd) {
  int64_t expected = 1;
  for (int i = static_cast<int>(nd.ndim()) - 1; i >= 0; --i) {
    if (nd.shape(i) != 1 && nd.stride(i) != expected) {
      return false;
    }
    expected *= static_cast<int64_t>(nd.shape(i));
  }
  return true;
}

}  // namespace

array copy_foreign(const nb::ndarray<nb::ro>& nd, std::optional<Dtype> dtype) {
  if (nd.device_type() != nb::device::cpu::value) {
    throw std::invalid_argument(
        "[array] Only host (CPU) memory can be converted; copy the array to the CPU first.");
  }
  const auto code = static_cast<nb::dlpack::dtype_code>(nd.dtype().code);
  // complex128 has no array dtype: its (real, imag) float64 pairs become complex64.
  const bool complex128 = code == nb::dlpack::dtype_code::Complex && nd.dtype().bits == 128;
  const Dtype src = complex128 ? complex64 : dtype_from_dlpack(nd.dtype().code, nd.dtype().bits);
  const Dtype target = dtype.value_or(src);
  Shape shape;
  for (size_t i = 0; i < nd.ndim(); ++i) {
    shape.push_back(static_cast<int32_t>(nd.shape(i)));
  }
  const size_t item = nd.dtype().bits / 8;
  const size_t nbytes = shape_size(shape) * item;
  const bool aligned = reinterpret_cast<uintptr_t>(nd.data()) % item == 0;
  if (!complex128 && row_contiguous(nd) && target == src) {
    array out(allocator::malloc(nbytes), shape, src);
    if (nbytes > 0) {
      nb::gil_scoped_release release;
      std::memcpy(out.data<void>(), nd.data(), nbytes);
    }
    return out;
  }
  // Gather (and convert) with the copy kernels, which handle any strides and run in parallel.
  // The caller holds `nd` until the copy is evaluated.
  const Dtype storage = !aligned ? uint8 : complex128 ? float64 : src;
  array foreign = view_foreign(nd, storage,
                               !aligned     ? static_cast<int>(item)
                               : complex128 ? 2
                                            : 1,
                               [](allocator::Buffer) {});
  array out = aligned && !complex128 && target != src ? astype(foreign, target) : copy(foreign);
  if (!aligned) {
    out = view(out, complex128 ? float64 : src);  // (..., item) bytes as one element
  }
  if (complex128) {
    out = view(astype(out, float32), complex64);  // (..., 2) pairs as one element
  }
  out = astype(reshape(out, shape), target);
  eval_releasing_gil({out});
  return out;
}

std::optional<array> wrap_foreign(const nb::ndarray<nb::ro>& nd) {
  const auto code = static_cast<nb::dlpack::dtype_code>(nd.dtype().code);
  const size_t item = nd.dtype().bits / 8;
  if (nd.device_type() != nb::device::cpu::value ||
      (code == nb::dlpack::dtype_code::Complex && nd.dtype().bits == 128) ||
      reinterpret_cast<uintptr_t>(nd.data()) % item != 0) {
    return std::nullopt;
  }
  auto* handle = new nb::ndarray<nb::ro>(nd);
  try {
    return view_foreign(nd, dtype_from_dlpack(nd.dtype().code, nd.dtype().bits), 1,
                        [handle](allocator::Buffer) { release_foreign(handle); });
  } catch (...) {
    delete handle;
    throw;
  }
}

Dtype dtype_from_dlpack(uint8_t code, uint8_t bits) {
  for (Dtype t : {bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16,
                  bfloat16, float32, float64, complex64}) {
    auto dt = dlpack_dtype(t);
    if (dt.code == code && dt.bits == bits) {
      return t;
    }
  }
  throw nb::type_error(msg("[array] Unsupported element type (DLPack type code ",
                           static_cast<int>(code), ", ", static_cast<int>(bits), " bits).")
                           .c_str());
}

array array_from_python(nb::handle obj, std::optional<Dtype> dtype) {
  if (is_array(obj)) {
    array a = nb::cast<array>(obj);
    return dtype ? astype(a, *dtype) : a;
  }
  if (auto s = scalar_to_array(obj, dtype)) {
    return *s;
  }
  // Objects that convert themselves (MLX's __mlx_array__ protocol).
  if (nb::hasattr(obj, "__mlx_array__")) {
    nb::object converted = obj.attr("__mlx_array__")();
    if (!is_array(converted)) {
      throw nb::type_error("[array] __mlx_array__ must return an mlx.core.array.");
    }
    return array_from_python(converted, dtype);
  }
  if (nb::isinstance<nb::list>(obj) || nb::isinstance<nb::tuple>(obj)) {
    return list_to_array(obj, dtype);
  }
  // Objects that only offer __array__ (NumPy scalars among them) go through NumPy first.
  if (nb::hasattr(obj, "__array__") && !nb::hasattr(obj, "__dlpack__")) {
    return array_from_python(obj.attr("__array__")(), dtype);
  }
  nb::ndarray<nb::ro> nd;
  if (nb::try_cast(obj, nd)) {
    // As in MLX, float64 data (from NumPy or any buffer) becomes float32 unless asked for.
    if (!dtype && nd.dtype() == nb::dtype<double>()) {
      dtype = float32;
    }
    return copy_foreign(nd, dtype);
  }
  std::string what = nb::cast<std::string>(nb::str(nb::handle(obj.type()).attr("__name__")));
  if (nb::hasattr(obj, "dtype") && nb::hasattr(obj, "tolist")) {
    // NumPy arrays that DLPack cannot carry: byte-swapped ones go through native order,
    // object arrays through their Python values.
    nb::object dt = obj.attr("dtype");
    if (nb::hasattr(dt, "isnative") && !nb::cast<bool>(dt.attr("isnative"))) {
      return array_from_python(obj.attr("astype")(dt.attr("newbyteorder")("=")), dtype);
    }
    if (nb::hasattr(dt, "kind") && nb::cast<std::string>(nb::str(dt.attr("kind"))) == "O") {
      return array_from_python(obj.attr("tolist")(), dtype);
    }
    what += " of dtype " + nb::cast<std::string>(nb::str(dt));
  }
  throw nb::type_error(
      msg("[array] Cannot convert an object of type ", what, " to an array.").c_str());
}

array to_operand(nb::handle obj, std::optional<Dtype> like) {
  if (is_array(obj)) {
    return nb::cast<array>(obj);
  }
  if (like) {
    bool is_int = nb::isinstance<nb::int_>(obj) && !nb::isinstance<nb::bool_>(obj);
    bool is_float = nb::isinstance<nb::float_>(obj);
    if ((is_int && *like != bool_) || (is_float && issubdtype(*like, DtypeCategory::inexact))) {
      return *scalar_to_array(obj, *like);
    }
  }
  return array_from_python(obj);
}

std::pair<array, array> to_operands(nb::handle a, nb::handle b) {
  if (is_array(a)) {
    array x = nb::cast<array>(a);
    return {x, to_operand(b, x.dtype())};
  }
  if (is_array(b)) {
    array y = nb::cast<array>(b);
    return {to_operand(a, y.dtype()), y};
  }
  return {to_operand(a), to_operand(b)};
}

namespace {

nb::object scalar_at(const array& a, size_t i) {
  switch (kind(a.dtype())) {
    case Dtype::Kind::b:
      return nb::bool_(a.data<bool>()[i]);
    case Dtype::Kind::u:
      return nb::int_(a.data<uint64_t>()[i]);
    case Dtype::Kind::i:
      return nb::int_(a.data<int64_t>()[i]);
    case Dtype::Kind::c: {
      auto v = a.data<complex64_t>()[i];
      return nb::cast(std::complex<double>(v.real(), v.imag()));
    }
    default:
      return nb::float_(a.data<double>()[i]);
  }
}

// Row-major host copy with 64-bit elements (bool and complex64 keep their types).
array widened(const array& a) {
  Dtype t = a.dtype();
  Dtype wide = t == bool_ || t == complex64 ? t
               : kind(t) == Dtype::Kind::u  ? uint64
               : kind(t) == Dtype::Kind::i  ? int64
                                            : float64;
  array out = contiguous(astype(a, wide));
  eval_releasing_gil({out});
  return out;
}

nb::object nested(const array& a, int dim, size_t& pos) {
  if (dim == a.ndim()) {
    return scalar_at(a, pos++);
  }
  nb::list out;
  for (int i = 0; i < a.shape(dim); ++i) {
    out.append(nested(a, dim + 1, pos));
  }
  return out;
}

}  // namespace

nb::object item(array a) {
  if (a.size() != 1) {
    throw std::invalid_argument(
        msg("[item] Only arrays of one element can be converted to a "
            "Python scalar; got shape ",
            a.shape(), "."));
  }
  return scalar_at(widened(a), 0);
}

nb::object tolist(array a) {
  array w = widened(a);
  size_t pos = 0;
  return nested(w, 0, pos);
}

nb::dlpack::dtype dlpack_dtype(Dtype t) {
  using Code = nb::dlpack::dtype_code;
  Code code = t == bfloat16               ? Code::Bfloat
              : t == bool_                ? Code::Bool
              : t == complex64            ? Code::Complex
              : kind(t) == Dtype::Kind::u ? Code::UInt
              : kind(t) == Dtype::Kind::i ? Code::Int
                                          : Code::Float;
  return {static_cast<uint8_t>(code), static_cast<uint8_t>(8 * size_of(t)), 1};
}

nb::ndarray<> host_view(const array& a) {
  std::vector<size_t> shape(a.shape().begin(), a.shape().end());
  // The ndarray's owner holds a handle on the array, which also keeps its buffer from being
  // donated to another op while the view exists.
  auto* owner = new array(a);
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<array*>(p); });
  // Writable: the consumer may write through it, so the host copy becomes the only valid one.
  return nb::ndarray<>(owner->data<void>(), shape.size(), shape.data(), keep, a.strides().data(),
                       dlpack_dtype(a.dtype()));
}

void eval_releasing_gil(std::vector<array> arrays, bool check_signals) {
  if (std::all_of(arrays.begin(), arrays.end(), [](const array& a) { return a.is_available(); })) {
    return;  // nothing to compute or wait for: skip the GIL round trip and the lock
  }
  {
    // Other Python threads run meanwhile, and may evaluate (overlapping graphs too).
    nb::gil_scoped_release release;
    eval(std::move(arrays));
  }
  // A Ctrl-C that came during the evaluation raises KeyboardInterrupt now.
  if (check_signals && PyErr_CheckSignals() != 0) {
    throw nb::python_error();
  }
}

nb::object to_numpy(array a) {
  if (a.dtype() == bfloat16) {
    a = astype(a, float32);
  }
  eval_releasing_gil({a});
  return nb::ndarray<nb::numpy>(host_view(a)).cast();
}

}  // namespace mlx::core::python
