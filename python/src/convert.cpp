#include "python/src/convert.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/string.h>

#include <complex>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "mlx/ops.h"
#include "mlx/transforms/eval.h"
#include "mlx/utils.h"

namespace nb = nanobind;

namespace mlx::core::python {

namespace {

bool is_array(nb::handle obj) { return nb::isinstance<array>(obj); }

Dtype int_dtype(int64_t v) {
  return v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min() ? int64
                                                                                            : int32;
}

// A Python scalar as an array of its natural dtype (or `dtype`).
std::optional<array> scalar_to_array(nb::handle obj, std::optional<Dtype> dtype) {
  if (nb::isinstance<nb::bool_>(obj)) {
    return array(nb::cast<bool>(obj), dtype.value_or(bool_));
  }
  if (nb::isinstance<nb::int_>(obj)) {
    int64_t v = nb::cast<int64_t>(obj);
    return astype(array(v, int64), dtype.value_or(int_dtype(v)));
  }
  if (nb::isinstance<nb::float_>(obj)) {
    double v = nb::cast<double>(obj);
    Dtype t = dtype.value_or(float32);
    return t == float64 ? array(v, float64) : astype(array(static_cast<float>(v)), t);
  }
  if (PyComplex_Check(obj.ptr())) {
    std::complex<float> v(PyComplex_RealAsDouble(obj.ptr()), PyComplex_ImagAsDouble(obj.ptr()));
    return astype(array(v), dtype.value_or(complex64));
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
    int64_t v = nb::cast<int64_t>(obj);
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
    return astype(array(v.data(), info.shape, complex64), dtype.value_or(complex64));
  }
  if (info.any_float) {
    std::vector<double> v;
    flatten_list(obj, v);
    Dtype t = dtype.value_or(float32);
    return astype(array(v.data(), info.shape, float64), t);
  }
  if (info.any_int) {
    std::vector<int64_t> v;
    flatten_list(obj, v);
    Dtype natural = std::max(int_dtype(info.min_int), int_dtype(info.max_int),
                             [](Dtype a, Dtype b) { return a.size < b.size; });
    return astype(array(v.data(), info.shape, int64), dtype.value_or(natural));
  }
  std::vector<uint8_t> v;
  flatten_list(obj, v);
  Dtype t = dtype.value_or(info.any_bool ? bool_ : float32);
  return astype(astype(array(v.data(), info.shape, uint8), bool_), t);
}

// Copies a foreign host array (any strides) into a new array we own.
array ndarray_to_array(const nb::ndarray<nb::ro>& nd, std::optional<Dtype> dtype) {
  if (nd.device_type() != nb::device::cpu::value) {
    throw std::invalid_argument(
        "[array] Only host (CPU) memory can be converted; copy the "
        "array to the CPU first.");
  }
  Dtype t = dtype_from_dlpack(nd.dtype().code, nd.dtype().bits);
  Shape shape;
  for (size_t i = 0; i < nd.ndim(); ++i) {
    shape.push_back(static_cast<int32_t>(nd.shape(i)));
  }
  const size_t item = t.size;
  std::vector<uint8_t> bytes(shape_size(shape) * item);
  // Gather the elements in row-major order (one memcpy when the source is C-contiguous).
  const auto* src = static_cast<const uint8_t*>(nd.data());
  bool c_contiguous = true;
  int64_t expected = 1;
  for (int i = static_cast<int>(nd.ndim()) - 1; i >= 0; --i) {
    c_contiguous = c_contiguous && (nd.shape(i) == 1 || nd.stride(i) == expected);
    expected *= static_cast<int64_t>(nd.shape(i));
  }
  if (c_contiguous) {
    std::memcpy(bytes.data(), src, bytes.size());
  } else {
    std::vector<int64_t> index(nd.ndim(), 0);
    for (size_t k = 0; k < bytes.size() / item; ++k) {
      int64_t offset = 0;
      for (size_t d = 0; d < nd.ndim(); ++d) {
        offset += index[d] * nd.stride(d);
      }
      std::memcpy(bytes.data() + k * item, src + offset * static_cast<int64_t>(item), item);
      for (int d = static_cast<int>(nd.ndim()) - 1; d >= 0; --d) {
        if (++index[d] < static_cast<int64_t>(nd.shape(d)))
          break;
        index[d] = 0;
      }
    }
  }
  array raw(bytes.data(), Shape{static_cast<int32_t>(bytes.size())}, uint8);
  array out = reshape(view(raw, t), shape);
  return dtype ? astype(out, *dtype) : out;
}

}  // namespace

Dtype dtype_from_dlpack(uint8_t code, uint8_t bits) {
  using Code = nb::dlpack::dtype_code;
  switch (static_cast<Code>(code)) {
    case Code::Bool:
      return bool_;
    case Code::Int:
      return bits == 8 ? int8 : bits == 16 ? int16 : bits == 32 ? int32 : int64;
    case Code::UInt:
      return bits == 8 ? uint8 : bits == 16 ? uint16 : bits == 32 ? uint32 : uint64;
    case Code::Float:
      if (bits == 16 || bits == 32 || bits == 64) {
        return bits == 16 ? float16 : bits == 32 ? float32 : float64;
      }
      break;
    case Code::Bfloat:
      return bfloat16;
    case Code::Complex:
      if (bits == 64) {
        return complex64;
      }
      break;
    default:
      break;
  }
  throw std::invalid_argument(msg("[array] Unsupported element type (DLPack code ",
                                  static_cast<int>(code), ", ", static_cast<int>(bits), " bits)."));
}

array array_from_python(nb::handle obj, std::optional<Dtype> dtype) {
  if (is_array(obj)) {
    array a = nb::cast<array>(obj);
    return dtype ? astype(a, *dtype) : a;
  }
  if (auto s = scalar_to_array(obj, dtype)) {
    return *s;
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
    bool complex128 = nd.dtype().code == static_cast<uint8_t>(nb::dlpack::dtype_code::Complex) &&
                      nd.dtype().bits == 128;
    if (complex128 && nb::hasattr(obj, "astype")) {
      return array_from_python(obj.attr("astype")("complex64"), dtype);  // as MLX does
    }
    return ndarray_to_array(nd, dtype);
  }
  throw nb::type_error(msg("[array] Cannot convert an object of type ",
                           nb::cast<std::string>(nb::str(nb::handle(obj.type()).attr("__name__"))),
                           " to an array.")
                           .c_str());
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
  {
    nb::gil_scoped_release release;
    eval(out);
  }
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

nb::object to_numpy(array a) {
  if (a.dtype() == bfloat16) {
    a = astype(a, float32);
  }
  {
    nb::gil_scoped_release release;
    eval(a);
  }
  std::vector<size_t> shape(a.shape().begin(), a.shape().end());
  auto* owner = new array(a);
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<array*>(p); });
  nb::dlpack::dtype dt{};
  switch (kind(a.dtype())) {
    case Dtype::Kind::b:
      dt = nb::dtype<bool>();
      break;
    case Dtype::Kind::u:
      dt = {static_cast<uint8_t>(nb::dlpack::dtype_code::UInt),
            static_cast<uint8_t>(8 * a.itemsize()), 1};
      break;
    case Dtype::Kind::i:
      dt = {static_cast<uint8_t>(nb::dlpack::dtype_code::Int),
            static_cast<uint8_t>(8 * a.itemsize()), 1};
      break;
    case Dtype::Kind::c:
      dt = {static_cast<uint8_t>(nb::dlpack::dtype_code::Complex), 64, 1};
      break;
    default:
      dt = {static_cast<uint8_t>(nb::dlpack::dtype_code::Float),
            static_cast<uint8_t>(8 * a.itemsize()), 1};
  }
  nb::ndarray<nb::numpy> nd(const_cast<void*>(a.data<void>()), shape.size(), shape.data(), keep,
                            a.strides().data(), dt);
  return nd.cast();
}

}  // namespace mlx::core::python
