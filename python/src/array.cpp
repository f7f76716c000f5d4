// mx.array: construction, properties, conversions, printing and the Python operators.
#include <nanobind/operators.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <sstream>

#include "mlx/ops.h"
#include "mlx/runtime/eval.h"
#include "mlx/utils.h"
#include "python/src/bindings.h"
#include "python/src/convert.h"
#include "python/src/interop.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace {

// Formats one element the way MLX prints it.
std::string format_scalar(const nb::object& v) {
  if (nb::isinstance<nb::bool_>(v)) {
    return nb::cast<bool>(v) ? "true" : "false";
  }
  if (nb::isinstance<nb::float_>(v)) {
    double d = nb::cast<double>(v);
    if (std::isnan(d))
      return "nan";
    if (std::isinf(d))
      return d > 0 ? "inf" : "-inf";
    std::ostringstream os;
    os.precision(6);
    os << d;
    return os.str();
  }
  if (PyComplex_Check(v.ptr())) {
    std::complex<double> c(PyComplex_RealAsDouble(v.ptr()), PyComplex_ImagAsDouble(v.ptr()));
    std::ostringstream os;
    os.precision(6);
    os << c.real() << (c.imag() < 0 ? "-" : "+") << std::abs(c.imag()) << "j";
    return os.str();
  }
  return nb::cast<std::string>(nb::str(v));
}

void format_nested(const nb::object& v, int depth, int indent, std::ostringstream& os) {
  if (!nb::isinstance<nb::list>(v)) {
    os << format_scalar(v);
    return;
  }
  nb::list l = nb::borrow<nb::list>(v);
  size_t n = nb::len(l);
  const size_t edge = 3;
  bool summarize = n > 2 * edge + 1 && depth >= 0;
  os << "[";
  for (size_t i = 0; i < n; ++i) {
    if (summarize && i == edge) {
      os << "...";
      i = n - edge - 1;
      os << (nb::isinstance<nb::list>(l[0]) ? ",\n" + std::string(indent + 1, ' ') : ", ");
      continue;
    }
    format_nested(l[i], depth, indent + 1, os);
    if (i + 1 < n) {
      if (nb::isinstance<nb::list>(l[i])) {
        os << ",\n" << std::string(indent + 1, ' ');
      } else {
        os << ", ";
      }
    }
  }
  os << "]";
}

std::string array_repr(array a) {
  std::ostringstream os;
  os << "array(";
  // Large arrays print their corners only.
  nb::object values = tolist(a);
  format_nested(values, a.size() > 1000 ? 0 : -1, 6, os);
  os << ", dtype=" << dtype_name(a.dtype()) << ")";
  return os.str();
}

using BinaryFn = array (*)(const array&, const array&, StreamOrDevice);

// Binds `name` and its reflected form `rname` to `fn` with Python-scalar operands.
template <typename Class>
void def_binary(Class& cls, const char* name, const char* rname, BinaryFn fn) {
  cls.def(name, [fn](const array& a, nb::handle b) { return fn(a, to_operand(b, a.dtype()), {}); });
  if (rname) {
    cls.def(rname,
            [fn](const array& a, nb::handle b) { return fn(to_operand(b, a.dtype()), a, {}); });
  }
}

}  // namespace

void init_array(nb::module_& m) {
  auto cls = nb::class_<array>(m, "array", "An N-dimensional array, evaluated lazily.",
                               nb::type_slots(array_buffer_slots()));
  cls.def(
         "__init__",
         [](array* self, nb::handle val, std::optional<Dtype> dtype) {
           new (self) array(array_from_python(val, dtype));
         },
         nb::arg("val"), nb::arg("dtype") = nb::none())
      .def_prop_ro("shape",
                   [](const array& a) {
                     nb::list l;
                     for (auto d : a.shape())
                       l.append(d);
                     return nb::tuple(l);
                   })
      .def_prop_ro("dtype", &array::dtype)
      .def_prop_ro("ndim", &array::ndim)
      .def_prop_ro("size", &array::size)
      .def_prop_ro("itemsize", &array::itemsize)
      .def_prop_ro("nbytes", &array::nbytes)
      .def_prop_ro("T", [](const array& a) { return transpose(a); })
      .def_prop_ro("real", [](const array& a) { return real(a); })
      .def_prop_ro("imag", [](const array& a) { return imag(a); })
      .def("item", &item)
      .def("tolist", &tolist)
      .def("__repr__", &array_repr)
      .def("__len__",
           [](const array& a) {
             if (a.ndim() == 0)
               throw nb::type_error("len() of a 0-d array");
             return a.shape(0);
           })
      .def("__iter__",
           [](const array& a) {
             if (a.ndim() == 0)
               throw nb::type_error("iteration over a 0-d array");
             nb::list rows;
             for (int i = 0; i < a.shape(0); ++i)
               rows.append(take(a, i, 0));
             return nb::iter(rows);
           })
      .def("__bool__", [](const array& a) { return nb::cast<bool>(item(astype(a, bool_))); })
      .def("__int__", [](const array& a) { return nb::int_(item(a)); })
      .def("__float__", [](const array& a) { return nb::float_(item(a)); })
      .def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); })
      .def(
          "astype", [](const array& a, Dtype t, StreamOrDevice s) { return astype(a, t, s); },
          nb::arg("dtype"), nb::arg("stream") = nb::none())
      .def("__neg__", [](const array& a) { return negative(a); })
      .def("__pos__", [](const array& a) { return a; })
      .def("__abs__", [](const array& a) { return abs(a); })
      .def("__invert__",
           [](const array& a) { return a.dtype() == bool_ ? logical_not(a) : bitwise_invert(a); })
      .def("__matmul__", [](const array& a, const array& b) { return matmul(a, b); })
      .def("__rmatmul__", [](const array& a, const array& b) { return matmul(b, a); })
      .def("__divmod__", [](const array& a, nb::handle b) {
        auto qr = divmod(a, to_operand(b, a.dtype()));
        return nb::make_tuple(qr[0], qr[1]);
      });

  struct Op {
    const char* name;
    const char* rname;
    BinaryFn fn;
  };
  const Op ops[] = {
      {"__add__", "__radd__", &add},
      {"__sub__", "__rsub__", &subtract},
      {"__mul__", "__rmul__", &multiply},
      {"__truediv__", "__rtruediv__", &divide},
      {"__floordiv__", "__rfloordiv__", &floor_divide},
      {"__mod__", "__rmod__", &remainder},
      {"__pow__", "__rpow__", &power},
      {"__and__", "__rand__", &bitwise_and},
      {"__or__", "__ror__", &bitwise_or},
      {"__xor__", "__rxor__", &bitwise_xor},
      {"__lshift__", "__rlshift__", &left_shift},
      {"__rshift__", "__rrshift__", &right_shift},
      {"__eq__", nullptr, &equal},
      {"__ne__", nullptr, &not_equal},
      {"__lt__", nullptr, &less},
      {"__le__", nullptr, &less_equal},
      {"__gt__", nullptr, &greater},
      {"__ge__", nullptr, &greater_equal},
      // In-place operators rebind the name to a new array (arrays are immutable values).
      {"__iadd__", nullptr, &add},
      {"__isub__", nullptr, &subtract},
      {"__imul__", nullptr, &multiply},
      {"__itruediv__", nullptr, &divide},
      {"__ifloordiv__", nullptr, &floor_divide},
      {"__imod__", nullptr, &remainder},
      {"__ipow__", nullptr, &power},
      {"__iand__", nullptr, &bitwise_and},
      {"__ior__", nullptr, &bitwise_or},
      {"__ixor__", nullptr, &bitwise_xor},
      {"__ilshift__", nullptr, &left_shift},
      {"__irshift__", nullptr, &right_shift},
  };
  for (auto& op : ops) {
    def_binary(cls, op.name, op.rname, op.fn);
  }
}
