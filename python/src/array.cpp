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
#include "python/src/mixed_precision.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace {

// mx.set_printoptions / mx.printoptions: significant digits of printed floats.
struct PrintOptions {
  int precision = 6;
};
PrintOptions& print_options() {
  static PrintOptions options;
  return options;
}

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
    os.precision(print_options().precision);
    os << d;
    return os.str();
  }
  if (PyComplex_Check(v.ptr())) {
    std::complex<double> c(PyComplex_RealAsDouble(v.ptr()), PyComplex_ImagAsDouble(v.ptr()));
    std::ostringstream os;
    os.precision(print_options().precision);
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
  if (a.size() == 0) {
    // An empty array of many empty rows prints its shape, not a list per row.
    size_t rows = 1;
    for (int i = 0; i + 1 < a.ndim() && a.shape(i) > 0; ++i) {
      rows *= static_cast<size_t>(a.shape(i));
      if (rows > 1000) {
        os << "[], shape=(";
        for (int j = 0; j < a.ndim(); ++j) {
          os << (j ? ", " : "") << a.shape(j);
        }
        os << "), dtype=" << dtype_name(a.dtype()) << ")";
        return os.str();
      }
    }
  }
  bool summarize = a.size() > 1000;
  if (summarize) {
    // Large arrays print their corners only: keep the 3 first and 3 last entries of each long
    // axis (and 2 fillers the printer skips), so only those elements become Python objects.
    for (int axis = 0; axis < a.ndim(); ++axis) {
      int d = a.shape(axis);
      if (d > 7) {
        a = take(a, array({0, 1, 2, 3, 4, d - 3, d - 2, d - 1}), axis);
      }
    }
  }
  nb::object values = tolist(a);
  format_nested(values, summarize ? 0 : -1, 6, os);
  os << ", dtype=" << dtype_name(a.dtype()) << ")";
  return os.str();
}

using BinaryFn = array (*)(const array&, const array&, StreamOrDevice);

// Binds `name` and its reflected form `rname` to `fn` with Python-scalar operands.
// Operands an array operator takes: arrays, Python scalars, sequences and foreign arrays.
// Anything else returns NotImplemented, so Python tries the other operand's reflected operator
// and otherwise raises its usual TypeError.
bool operand_convertible(nb::handle b) {
  return is_array(b) || PyBool_Check(b.ptr()) || PyLong_Check(b.ptr()) || PyFloat_Check(b.ptr()) ||
         PyComplex_Check(b.ptr()) || nb::isinstance<nb::list>(b) || nb::isinstance<nb::tuple>(b) ||
         nb::hasattr(b, "__mlx_array__") || nb::hasattr(b, "__array__") ||
         nb::hasattr(b, "__dlpack__") || PyObject_CheckBuffer(b.ptr());
}

template <typename Class>
void def_binary(Class& cls, const char* name, const char* rname, BinaryFn fn) {
  cls.def(name, [fn](const array& a, nb::handle b) -> nb::object {
    if (!operand_convertible(b)) {
      return nb::borrow(Py_NotImplemented);
    }
    return nb::cast(fn(a, to_operand(b, a.dtype()), {}));
  });
  if (rname) {
    cls.def(rname, [fn](const array& a, nb::handle b) -> nb::object {
      if (!operand_convertible(b)) {
        return nb::borrow(Py_NotImplemented);
      }
      return nb::cast(fn(to_operand(b, a.dtype()), a, {}));
    });
  }
}

// Pickle state: (row-major bytes, shape, dtype name).
nb::tuple array_state(const array& a) {
  array c = contiguous(a);
  eval_releasing_gil({c});
  nb::bytes data(c.data<char>(), c.nbytes());
  nb::list shape;
  for (auto d : a.shape()) {
    shape.append(d);
  }
  return nb::make_tuple(data, nb::tuple(shape), dtype_name(a.dtype()));
}

array array_from_state(const nb::tuple& state) {
  if (nb::len(state) != 3) {
    throw nb::value_error("[array.__setstate__] Expected (bytes, shape, dtype name).");
  }
  nb::bytes data = nb::cast<nb::bytes>(state[0]);
  Shape shape;
  for (auto d : state[1]) {
    shape.push_back(nb::cast<int>(d));
  }
  // Dtype names match mlx.core's attributes, except bool (mx.bool_).
  std::string name = nb::cast<std::string>(state[2]);
  nb::object type = nb::getattr(nb::module_::import_("mlx.core"),
                                name == "bool" ? "bool_" : name.c_str(), nb::none());
  if (!nb::isinstance<Dtype>(type)) {
    throw nb::value_error("[array.__setstate__] Unknown dtype name.");
  }
  Dtype t = nb::cast<Dtype>(type);
  const auto* bytes = reinterpret_cast<const uint8_t*>(data.c_str());
  size_t n = data.size();
  size_t count = 1;
  for (int d : shape) {
    count *= static_cast<size_t>(d);
  }
  if (n != count * size_of(t)) {
    throw nb::value_error("[array.__setstate__] The data size does not match shape and dtype.");
  }
  if (n == 0) {
    return zeros(shape, t);
  }
  array raw(bytes, {static_cast<int>(n)}, uint8);
  return reshape(view(raw, t), shape);
}

// Any object that mx.array converts (scalars, sequences, NumPy and DLPack arrays, objects
// with __mlx_array__), named for type annotations.
struct ArrayLike {
  nb::object obj;
};

// Iterates over the first axis, taking one row at a time.
struct ArrayIterator {
  array a;
  int index = 0;
};

}  // namespace

void init_print_options(nb::module_& m) {
  nb::class_<PrintOptions>(m, "PrintOptions",
                           "How arrays print: ``precision`` is the number of "
                           "significant digits of floating-point values.")
      .def(nb::init<>())
      .def_rw("precision", &PrintOptions::precision)
      .def("__repr__", [](const PrintOptions& o) {
        return "PrintOptions(precision=" + std::to_string(o.precision) + ")";
      });
  auto set_precision = [](std::optional<int> precision) {
    if (precision) {
      if (*precision < 0) {
        throw nb::value_error("[set_printoptions] precision must be non-negative.");
      }
      print_options().precision = *precision;
    }
  };
  m.def("set_printoptions", set_precision, nb::arg("precision") = nb::none(),
        "set_printoptions(precision=None)\n\nSets how arrays print from now on.\n\nArgs:\n    "
        "precision (int, optional): Significant digits of floating-point values (default 6). "
        "None keeps the current value.");
  m.def(
      "get_printoptions", []() { return print_options(); },
      "get_printoptions()\n\nA copy of the current print options.\n\nReturns:\n    "
      "PrintOptions");
  struct PrintOptionsContext {
    std::optional<int> precision;
    PrintOptions saved;
  };
  nb::class_<PrintOptionsContext>(m, "_PrintOptionsContext")
      .def("__enter__",
           [set_precision](PrintOptionsContext& c) {
             c.saved = print_options();
             set_precision(c.precision);
             return print_options();
           })
      .def("__exit__", [](PrintOptionsContext& c, nb::args) { print_options() = c.saved; });
  m.def(
      "printoptions",
      [](std::optional<int> precision) {
        return PrintOptionsContext{precision, {}};
      },
      nb::arg("precision") = nb::none(),
      "printoptions(precision=None)\n\nA context manager that applies print options inside its "
      "block and restores the previous ones after it.\n\nExample:\n    >>> with "
      "mx.printoptions(precision=3):\n    ...     print(mx.array([1 / 3]))\n    array([0.333], "
      "dtype=float32)");
}

void init_array(nb::module_& m) {
  init_print_options(m);
  nb::class_<ArrayIterator>(m, "ArrayIterator", "Iterates over the first axis of an array.")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__", [](ArrayIterator& it) {
        if (it.index >= it.a.shape(0)) {
          throw nb::stop_iteration();
        }
        return take(it.a, it.index++, 0);
      });
  nb::class_<ArrayLike>(m, "ArrayLike",
                        "Wraps an object that converts to an array: a scalar, a (nested) list "
                        "or tuple, a NumPy / DLPack / buffer array, or an object with an "
                        "``__mlx_array__`` method. ``mx.array(ArrayLike(x))`` is ``mx.array(x)``.")
      .def(nb::init<nb::object>(), nb::arg("obj"))
      .def("__mlx_array__", [](const ArrayLike& l) { return array_from_python(l.obj); });
  auto cls = nb::class_<array>(m, "array", "An N-dimensional array, evaluated lazily.",
                               nb::type_slots(array_buffer_slots()));
  cls.def(
         "__init__",
         [](array* self, nb::handle val, std::optional<Dtype> dtype) {
           new (self) array(array_from_python(val, dtype));
         },
         nb::arg("val"), nb::arg("dtype") = nb::none())
      .def_prop_ro(
          "shape",
          [](const array& a) {
            nb::list l;
            for (auto d : a.shape())
              l.append(d);
            return nb::tuple(l);
          },
          "The dimensions of the array as a tuple of ints.")
      .def_prop_ro("dtype", &array::dtype, "The type of the elements (an mx.Dtype).")
      .def_prop_ro("ndim", &array::ndim, "The number of dimensions.")
      .def_prop_ro("size", &array::size, "The number of elements.")
      .def_prop_ro("itemsize", &array::itemsize, "The size of one element in bytes.")
      .def_prop_ro("nbytes", &array::nbytes, "The size of the elements in bytes (size * itemsize).")
      .def_prop_ro(
          "T", [](const array& a) { return transpose(a); },
          "The array with its axes reversed (a view), like ``mx.transpose(a)``.")
      .def_prop_ro(
          "real", [](const array& a) { return real(a); }, "The real part of each element.")
      .def_prop_ro(
          "imag", [](const array& a) { return imag(a); },
          "The imaginary part of each element (zeros for real arrays).")
      .def("item", &item,
           "item()\n\nThe value of a one-element array as a Python scalar (bool, int, float or "
           "complex); evaluates the array.")
      .def("tolist", &tolist,
           "tolist()\n\nThe elements as nested Python lists of scalars (a scalar for a 0-d "
           "array); evaluates the array.")
      .def("__repr__", &array_repr)
      .def(
          "__format__",
          [](const array& a, nb::object spec) -> nb::object {
            // f"{x:.3f}" formats the value of a scalar array; an empty spec prints the array.
            std::string fmt = nb::cast<std::string>(nb::str(spec));
            if (fmt.empty()) {
              return nb::str(array_repr(a).c_str());
            }
            if (a.size() != 1) {
              throw nb::type_error(msg("[array.__format__] Format specifier '", fmt,
                                       "' needs a single-element array; got shape ", a.shape(), ".")
                                       .c_str());
            }
            return nb::module_::import_("builtins").attr("format")(item(reshape(a, {})), spec);
          },
          nb::arg("arg"))
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
             return ArrayIterator{a};
           })
      .def_prop_ro(
          "mT", [](const array& a) { return matrix_transpose(a); },
          "The array with its last two axes swapped (at least 2 dimensions).")
      .def("__copy__", [](const array& a) { return mlx::core::copy(a); })
      .def(
          "__deepcopy__", [](const array& a, nb::dict) { return mlx::core::copy(a); },
          nb::arg("memo"))
      .def("__getstate__", &array_state)
      .def("__setstate__",
           [](array* self, const nb::tuple& state) { new (self) array(array_from_state(state)); })
      .def("__bool__", [](const array& a) { return nb::cast<bool>(item(astype(a, bool_))); })
      .def("__int__", [](const array& a) { return nb::int_(item(a)); })
      .def("__float__", [](const array& a) { return nb::float_(item(a)); })
      .def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); })
      .def(
          "astype", [](const array& a, Dtype t, StreamOrDevice s) { return astype(a, t, s); },
          nb::arg("dtype"), nb::arg("stream") = nb::none(),
          "astype(dtype, stream=None)\n\nThe array converted to ``dtype`` (NumPy's conversion "
          "rules). Returns the array itself when the dtype already matches.")
      .def("__neg__", [](const array& a) { return negative(a); })
      .def("__pos__", [](const array& a) { return a; })
      .def("__abs__", [](const array& a) { return abs(a); })
      .def("__invert__",
           [](const array& a) { return a.dtype() == bool_ ? logical_not(a) : bitwise_invert(a); })
      .def("__matmul__",
           [](const array& a, const array& b) {
             return matmul(in_compute_dtype(a), in_compute_dtype(b));
           })
      .def("__rmatmul__",
           [](const array& a, const array& b) {
             return matmul(in_compute_dtype(b), in_compute_dtype(a));
           })
      .def("__imatmul__",
           [](const array& a, const array& b) {
             return matmul(in_compute_dtype(a), in_compute_dtype(b));
           })
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
