// Array creation: arange, linspace, full, zeros, ones, eye, identity, tri and the *_like forms.
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

array arange_impl(const Number& start, const Number& stop, const std::optional<Number>& step,
                  std::optional<Dtype> dtype, StreamOrDevice s) {
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
      "stream"_a = nb::none());
}

// zeros / ones: a shape and a dtype (float32 by default).
using FillFn = array (*)(const Shape&, Dtype, StreamOrDevice);

void def_fill(nb::module_& m, const char* name, FillFn fn) {
  m.def(
      name,
      [fn](const IntOrInts& shape, std::optional<Dtype> dtype, StreamOrDevice s) {
        return fn(to_ints(shape), dtype.value_or(float32), s);
      },
      "shape"_a, "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
}

}  // namespace

void init_ops_creation(nb::module_& m) {
  m.def("arange", &arange_impl, "start"_a, "stop"_a, "step"_a = nb::none(), "dtype"_a = nb::none(),
        nb::kw_only(), "stream"_a = nb::none(),
        "Evenly spaced values in [start, stop); int32 unless an argument is a float.");
  m.def(
      "arange",
      [](const Number& stop, const std::optional<Number>& step, std::optional<Dtype> dtype,
         StreamOrDevice s) { return arange_impl(Number(0), stop, step, dtype, s); },
      "stop"_a, "step"_a = nb::none(), "dtype"_a = nb::none(), nb::kw_only(),
      "stream"_a = nb::none());
  m.def(
      "linspace",
      [](double start, double stop, int num, std::optional<Dtype> dtype, StreamOrDevice s) {
        return linspace(start, stop, num, dtype.value_or(float32), s);
      },
      "start"_a, "stop"_a, "num"_a = 50, "dtype"_a = nb::none(), nb::kw_only(),
      "stream"_a = nb::none());
  m.def(
      "full",
      [](const IntOrInts& shape, const ScalarOrArray& vals, std::optional<Dtype> dtype,
         StreamOrDevice s) {
        array v = vals.get(dtype);
        return full(to_ints(shape), v, dtype.value_or(v.dtype()), s);
      },
      "shape"_a, "vals"_a, "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
  def_fill(m, "zeros", &zeros);
  def_fill(m, "ones", &ones);
  def_op(
      m, {"astype"},
      [](const array& a, Dtype dtype, StreamOrDevice s) { return astype(a, dtype, s); }, "dtype"_a);
  def_op(m, {"zeros_like"}, [](const array& a, StreamOrDevice s) { return zeros_like(a, s); });
  def_op(m, {"ones_like"}, [](const array& a, StreamOrDevice s) { return ones_like(a, s); });
  def_op(
      m, {"full_like"},
      [](const array& a, const ScalarOrArray& vals, std::optional<Dtype> dtype, StreamOrDevice s) {
        Dtype t = dtype.value_or(a.dtype());
        return full(a.shape(), vals.get(t), t, s);
      },
      "vals"_a, "dtype"_a = nb::none());
  def_diagonal_creator(m, "eye", &eye);
  def_diagonal_creator(m, "tri", &tri);
  m.def(
      "identity",
      [](int n, std::optional<Dtype> dtype, StreamOrDevice s) {
        return identity(n, dtype.value_or(float32), s);
      },
      "n"_a, "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
}

}  // namespace mlx::core::python
