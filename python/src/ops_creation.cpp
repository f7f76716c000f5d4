// Array creation: arange, linspace, full, zeros, ones, eye, identity, tri, the *_like forms,
// window functions (hanning, hamming, blackman, bartlett) and asarray.
#include "mlx/utils.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mlx::core::python {

namespace {

// A Python int or float; arange infers int32 or float32 from which kinds it got.
using Number = std::variant<int, double>;

double value(const Number& n) {
  return std::visit([](auto v) { return static_cast<double>(v); }, n);
}
bool is_float(const std::optional<Number>& n) { return n && std::holds_alternative<double>(*n); }

array arange_impl(const Number& start, const std::optional<Number>& maybe_stop,
                  const std::optional<Number>& step, std::optional<Dtype> dtype, StreamOrDevice s) {
  // arange(start=n, stop=None) counts from 0 to n, like arange(n).
  if (!maybe_stop) {
    return arange_impl(Number(0), start, step, dtype, s);
  }
  const Number& stop = *maybe_stop;
  bool any_float = is_float(start) || is_float(stop) || is_float(step);
  return arange(value(start), value(stop), step ? value(*step) : 1.0,
                dtype.value_or(any_float ? float32 : int32), s);
}

// n x m creators with a diagonal offset k (eye, tri).
using DiagonalFn = array (*)(int, int, int, Dtype, StreamOrDevice);

void def_diagonal_creator(nb::module_& m, const char* name, DiagonalFn fn) {
  m.def(
      name,
      [fn](int n, std::optional<int> cols, int k, std::optional<Dtype> dtype, StreamOrDevice s) {
        return fn(n, cols.value_or(n), k, dtype.value_or(float32), s);
      },
      "n"_a, "m"_a = nb::none(), "k"_a = 0, "dtype"_a = nb::none(), nb::kw_only(),
      "stream"_a = nb::none(), docstring(name));
}

// zeros / ones: a shape and a dtype (float32 by default).
using FillFn = array (*)(const Shape&, Dtype, StreamOrDevice);

void def_fill(nb::module_& m, const char* name, FillFn fn) {
  m.def(
      name,
      [fn](const IntOrInts& shape, std::optional<Dtype> dtype, StreamOrDevice s) {
        return fn(to_ints(shape), dtype.value_or(float32), s);
      },
      "shape"_a, "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(), docstring(name));
}

using WindowFn = array (*)(int, StreamOrDevice);
const std::pair<const char*, WindowFn> kWindows[] = {
    {"hanning", &hanning}, {"hamming", &hamming}, {"blackman", &blackman}, {"bartlett", &bartlett}};

// mx.asarray: the input itself when it is an array of the requested dtype (unless copy=True),
// memory shared through DLPack where the producer allows it (unless copy=True), else a converted
// copy; copy=False raises ValueError when a copy is unavoidable.
nb::object asarray_impl(nb::handle a, std::optional<Dtype> dtype, std::optional<bool> copy) {
  auto convert = [&](const array& x) -> nb::object {
    if (!dtype || *dtype == x.dtype()) {
      return nb::cast(x);
    }
    if (copy == false) {
      throw std::invalid_argument(msg("[asarray] copy=False, but converting ", x.dtype(), " to ",
                                      *dtype, " requires a copy."));
    }
    return nb::cast(astype(x, *dtype));
  };
  if (nb::isinstance<array>(a)) {
    const array& x = nb::cast<const array&>(a);
    if (copy == true) {
      return nb::cast(astype(mlx::core::copy(x), dtype.value_or(x.dtype())));
    }
    return (!dtype || *dtype == x.dtype()) ? nb::borrow(a) : convert(x);
  }
  if (copy != true && nb::hasattr(a, "__dlpack__")) {
    try {
      nb::object shared = nb::module_::import_("mlx.core").attr("from_dlpack")(a, "copy"_a = false);
      return convert(nb::cast<array>(shared));
    } catch (const nb::python_error&) {
      // Not shareable (device memory, unsupported dtype or layout): copy below unless forbidden.
    }
  }
  if (copy == false) {
    throw std::invalid_argument(
        "[asarray] copy=False, but the input cannot be converted without a copy.");
  }
  return nb::cast(array_from_python(a, dtype));
}

}  // namespace

void init_ops_creation(nb::module_& m) {
  m.def("arange", &arange_impl, "start"_a, "stop"_a.none(), "step"_a = nb::none(),
        "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(), docstring("arange"));
  m.def(
      "arange",
      [](const Number& stop, const std::optional<Number>& step, std::optional<Dtype> dtype,
         StreamOrDevice s) { return arange_impl(Number(0), Number(stop), step, dtype, s); },
      "stop"_a, "step"_a = nb::none(), "dtype"_a = nb::none(), nb::kw_only(),
      "stream"_a = nb::none(), docstring("arange"));
  m.def(
      "linspace",
      [](double start, double stop, int num, bool endpoint, std::optional<Dtype> dtype,
         StreamOrDevice s) {
        return linspace(start, stop, num, endpoint, dtype.value_or(float32), s);
      },
      "start"_a, "stop"_a, "num"_a = 50, "endpoint"_a = true, "dtype"_a = nb::none(), nb::kw_only(),
      "stream"_a = nb::none(), docstring("linspace"));
  m.def(
      "full",
      [](const IntOrInts& shape, const ScalarOrArray& vals, std::optional<Dtype> dtype,
         StreamOrDevice s) {
        array v = vals.get(dtype);
        return full(to_ints(shape), v, dtype.value_or(v.dtype()), s);
      },
      "shape"_a, "vals"_a, "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
      docstring("full"));
  def_fill(m, "zeros", &zeros);
  def_fill(m, "ones", &ones);
  def_op(
      m, {"astype"},
      [](const array& a, Dtype dtype, StreamOrDevice s) { return astype(a, dtype, s); }, "dtype"_a);
  def_op(
      m, {"zeros_like"},
      [](const array& a, std::optional<Dtype> dtype, StreamOrDevice s) {
        return full_like(a, array(false), dtype.value_or(a.dtype()), s);
      },
      "dtype"_a = nb::none());
  def_op(
      m, {"ones_like"},
      [](const array& a, std::optional<Dtype> dtype, StreamOrDevice s) {
        return full_like(a, array(true), dtype.value_or(a.dtype()), s);
      },
      "dtype"_a = nb::none());
  // Arrays always hold defined values, so "empty" arrays are zero-filled.
  m.attr("empty") = m.attr("zeros");
  m.attr("empty_like") = m.attr("zeros_like");
  def_op(
      m, {"full_like"},
      [](const array& a, const ScalarOrArray& vals, std::optional<Dtype> dtype, StreamOrDevice s) {
        Dtype t = dtype.value_or(a.dtype());
        return full_like(a, vals.get(t), t, s);
      },
      "vals"_a, "dtype"_a = nb::none());
  def_diagonal_creator(m, "eye", &eye);
  def_diagonal_creator(m, "tri", &tri);
  m.def(
      "identity",
      [](int n, std::optional<Dtype> dtype, StreamOrDevice s) {
        return identity(n, dtype.value_or(float32), s);
      },
      "n"_a, "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(), docstring("identity"));
  for (const auto& [name, fn] : kWindows) {
    m.def(
        name, [fn](int M, StreamOrDevice s) { return fn(M, s); }, "M"_a, nb::kw_only(),
        "stream"_a = nb::none(), docstring(name));
  }
  m.def("asarray", &asarray_impl, "a"_a, "dtype"_a = nb::none(), nb::kw_only(),
        "copy"_a = nb::none(), docstring("asarray"));
}

}  // namespace mlx::core::python
