// mx.linalg: norms, cross product, and the LAPACK-backed factorizations and solvers.
#include "mlx/linalg.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "python/src/bindings.h"
#include "python/src/docstrings.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace mlx::core;
using mlx::core::python::IntOrInts;

namespace {

std::optional<std::vector<int>> to_axes(const std::optional<IntOrInts>& axis) {
  if (!axis) {
    return std::nullopt;
  }
  if (auto* i = std::get_if<int>(&*axis)) {
    return std::vector<int>{*i};
  }
  return std::get<std::vector<int>>(*axis);
}

nb::tuple as_tuple(const std::vector<array>& xs) {
  nb::list l;
  for (auto& x : xs) {
    l.append(nb::cast(x));
  }
  return nb::tuple(l);
}

}  // namespace

void init_linalg(nb::module_& parent) {
  using mlx::core::python::docstring;
  nb::module_ m = parent.def_submodule("linalg", "Linear algebra.");
  m.def(
      "norm",
      [](const array& a, std::optional<std::variant<double, std::string>> ord,
         std::optional<IntOrInts> axis, bool keepdims, StreamOrDevice s) {
        auto axes = to_axes(axis);
        if (!ord) {
          return linalg::norm(a, axes, keepdims, s);
        }
        if (auto* str = std::get_if<std::string>(&*ord)) {
          return linalg::norm(a, *str, axes, keepdims, s);
        }
        return linalg::norm(a, std::get<double>(*ord), axes, keepdims, s);
      },
      nb::arg("a"), nb::arg("ord") = nb::none(), nb::arg("axis") = nb::none(),
      nb::arg("keepdims") = false, nb::kw_only(), nb::arg("stream") = nb::none(),
      nb::sig("def norm(a: array, /, ord: Union[None, int, float, str] = None, axis: Union[None, "
              "int, list[int]] = None, keepdims: bool = False, *, stream: Union[None, Stream, "
              "Device] = None) -> array"),
      docstring("linalg.norm"));
  m.def("cross", &linalg::cross, nb::arg("a"), nb::arg("b"), nb::arg("axis") = -1, nb::kw_only(),
        nb::arg("stream") = nb::none(), docstring("linalg.cross"));
  m.def("inv", &linalg::inv, nb::arg("a"), nb::kw_only(), nb::arg("stream") = nb::none(),
        docstring("linalg.inv"));
  m.def("tri_inv", &linalg::tri_inv, nb::arg("a"), nb::arg("upper") = false, nb::kw_only(),
        nb::arg("stream") = nb::none(), docstring("linalg.tri_inv"));
  m.def("cholesky", &linalg::cholesky, nb::arg("a"), nb::arg("upper") = false, nb::kw_only(),
        nb::arg("stream") = nb::none(), docstring("linalg.cholesky"));
  m.def("cholesky_inv", &linalg::cholesky_inv, nb::arg("a"), nb::arg("upper") = false,
        nb::kw_only(), nb::arg("stream") = nb::none(), docstring("linalg.cholesky_inv"));
  m.def("pinv", &linalg::pinv, nb::arg("a"), nb::kw_only(), nb::arg("stream") = nb::none(),
        docstring("linalg.pinv"));
  m.def("solve", &linalg::solve, nb::arg("a"), nb::arg("b"), nb::kw_only(),
        nb::arg("stream") = nb::none(), docstring("linalg.solve"));
  m.def("solve_triangular", &linalg::solve_triangular, nb::arg("a"), nb::arg("b"), nb::kw_only(),
        nb::arg("upper") = false, nb::arg("stream") = nb::none(),
        docstring("linalg.solve_triangular"));
  m.def("qr", &linalg::qr, nb::arg("a"), nb::kw_only(), nb::arg("stream") = nb::none(),
        docstring("linalg.qr"));
  m.def(
      "svd",
      [](const array& a, bool compute_uv, StreamOrDevice s) -> nb::object {
        auto out = linalg::svd(a, compute_uv, s);
        if (!compute_uv) {
          return nb::cast(out[0]);
        }
        return as_tuple(out);
      },
      nb::arg("a"), nb::arg("compute_uv") = true, nb::kw_only(), nb::arg("stream") = nb::none(),
      docstring("linalg.svd"));
  m.def("eigvalsh", &linalg::eigvalsh, nb::arg("a"), nb::arg("UPLO") = "L", nb::kw_only(),
        nb::arg("stream") = nb::none(), docstring("linalg.eigvalsh"));
  m.def("eigh", &linalg::eigh, nb::arg("a"), nb::arg("UPLO") = "L", nb::kw_only(),
        nb::arg("stream") = nb::none(), docstring("linalg.eigh"));
  m.def("eigvals", &linalg::eigvals, nb::arg("a"), nb::kw_only(), nb::arg("stream") = nb::none(),
        docstring("linalg.eigvals"));
  m.def("eig", &linalg::eig, nb::arg("a"), nb::kw_only(), nb::arg("stream") = nb::none(),
        docstring("linalg.eig"));
  m.def("lu_factor", &linalg::lu_factor, nb::arg("a"), nb::kw_only(),
        nb::arg("stream") = nb::none(), docstring("linalg.lu_factor"));
  m.def("det", &linalg::det, nb::arg("a"), nb::kw_only(), nb::arg("stream") = nb::none(),
        docstring("linalg.det"));
  m.def("slogdet", &linalg::slogdet, nb::arg("a"), nb::kw_only(), nb::arg("stream") = nb::none(),
        docstring("linalg.slogdet"));
  m.def(
      "lu", [](const array& a, StreamOrDevice s) { return as_tuple(linalg::lu(a, s)); },
      nb::arg("a"), nb::kw_only(), nb::arg("stream") = nb::none(), docstring("linalg.lu"));
  // MLX's top-level name for the same function.
  parent.attr("matrix_norm") = m.attr("norm");
}
