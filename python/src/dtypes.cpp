// mx.Dtype, the dtype objects, dtype categories, finfo, iinfo, can_cast and isdtype.
#include <nanobind/operators.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <variant>

#include "mlx/dtype.h"
#include "mlx/ops/composites.h"
#include "python/src/bindings.h"

namespace nb = nanobind;
using namespace mlx::core;

namespace {

using DtypeOrCategory = std::variant<Dtype, DtypeCategory>;

bool is_subdtype(const DtypeOrCategory& a, const DtypeOrCategory& b) {
  return std::visit([](auto x, auto y) { return issubdtype(x, y); }, a, b);
}

// One entry of isdtype's `kind`: a dtype (equality) or a kind string.
using DtypeOrKind = std::variant<Dtype, std::string>;
bool is_kind(Dtype dtype, const DtypeOrKind& kind) {
  if (auto* d = std::get_if<Dtype>(&kind)) {
    return dtype == *d;
  }
  return isdtype(dtype, std::get<std::string>(kind));
}

}  // namespace

void init_dtypes(nb::module_& m) {
  nb::class_<Dtype>(m, "Dtype", "An array's element type, e.g. mlx.core.float32.")
      .def_prop_ro(
          "size", [](const Dtype& d) { return static_cast<int>(d.size); },
          "Size of one element in bytes.")
      .def("__repr__", [](const Dtype& d) { return "mlx.core." + dtype_name(d); })
      .def("__eq__", [](const Dtype& a, const Dtype& b) { return a == b; })
      .def("__eq__", [](const Dtype&, nb::handle) { return false; })
      .def("__hash__", [](const Dtype& d) { return static_cast<int>(d.val); });

  const std::pair<const char*, Dtype> dtypes[] = {
      {"bool_", bool_},       {"uint8", uint8},        {"uint16", uint16},   {"uint32", uint32},
      {"uint64", uint64},     {"int8", int8},          {"int16", int16},     {"int32", int32},
      {"int64", int64},       {"float16", float16},    {"float32", float32}, {"float64", float64},
      {"bfloat16", bfloat16}, {"complex64", complex64}};
  for (auto& [name, dt] : dtypes) {
    m.attr(name) = nb::cast(dt);
  }

  nb::enum_<DtypeCategory>(m, "DtypeCategory", "Abstract dtype categories for issubdtype.")
      .value("complexfloating", DtypeCategory::complexfloating)
      .value("floating", DtypeCategory::floating)
      .value("inexact", DtypeCategory::inexact)
      .value("signedinteger", DtypeCategory::signedinteger)
      .value("unsignedinteger", DtypeCategory::unsignedinteger)
      .value("integer", DtypeCategory::integer)
      .value("number", DtypeCategory::number)
      .value("generic", DtypeCategory::generic)
      .export_values();

  m.def("issubdtype", &is_subdtype, nb::arg("arg1"), nb::arg("arg2"),
        "Whether a dtype or category is below another in the dtype hierarchy.");

  m.def(
      "can_cast",
      [](const std::variant<Dtype, array>& from_, Dtype to) {
        Dtype from = std::holds_alternative<Dtype>(from_) ? std::get<Dtype>(from_)
                                                          : std::get<array>(from_).dtype();
        return can_cast(from, to);
      },
      nb::arg("from_"), nb::arg("to"),
      "Whether promoting `from_` (a dtype or an array's dtype) with `to` gives `to`.");
  m.def(
      "isdtype",
      [](Dtype dtype, const std::variant<DtypeOrKind, std::vector<DtypeOrKind>>& kind) {
        if (auto* one = std::get_if<DtypeOrKind>(&kind)) {
          return is_kind(dtype, *one);
        }
        const auto& many = std::get<std::vector<DtypeOrKind>>(kind);
        return std::any_of(many.begin(), many.end(),
                           [&](const DtypeOrKind& k) { return is_kind(dtype, k); });
      },
      nb::arg("dtype"), nb::arg("kind"),
      "Whether `dtype` matches a dtype, a kind string or any entry of a tuple of them.");

  nb::class_<finfo>(m, "finfo", "Machine limits of a floating point dtype.")
      .def(nb::init<Dtype>(), nb::arg("dtype"))
      .def_ro("dtype", &finfo::dtype)
      .def_ro("min", &finfo::min)
      .def_ro("max", &finfo::max)
      .def_ro("eps", &finfo::eps)
      .def_ro("smallest_normal", &finfo::tiny, "The smallest positive normal value.")
      .def_prop_ro(
          "bits", [](const finfo& f) { return 8 * size_of(f.dtype); },
          "The number of bits of the dtype (both halves for complex64).")
      .def("__repr__", [](const finfo& f) {
        return "finfo(min=" + std::to_string(f.min) + ", max=" + std::to_string(f.max) +
               ", dtype=" + dtype_name(f.dtype) + ")";
      });
  nb::class_<iinfo>(m, "iinfo", "Machine limits of an integer dtype.")
      .def(nb::init<Dtype>(), nb::arg("dtype"))
      .def_ro("dtype", &iinfo::dtype)
      .def_ro("min", &iinfo::min)
      .def_ro("max", &iinfo::max)
      .def("__repr__", [](const iinfo& i) {
        return "iinfo(min=" + std::to_string(i.min) + ", max=" + std::to_string(i.max) +
               ", dtype=" + dtype_name(i.dtype) + ")";
      });
}
