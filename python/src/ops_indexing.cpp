// Index-based ops: take, take_along_axis, put_along_axis, sort, partition and topk.
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mlx::core::python {

namespace {

using SortFn = array (*)(const array&, int, StreamOrDevice);
using SortAllFn = array (*)(const array&, StreamOrDevice);
using KthFn = array (*)(const array&, int, int, StreamOrDevice);
using KthAllFn = array (*)(const array&, int, StreamOrDevice);

struct Sort {
  const char* name;
  SortFn along;
  SortAllFn all;
};
const Sort kSort[] = {{"sort", &sort, &sort}, {"argsort", &argsort, &argsort}};

// Ops with an integer parameter (kth, k) before the axis.
struct Kth {
  const char* name;
  const char* param;
  KthFn along;
  KthAllFn all;
};
const Kth kKth[] = {
    {"partition", "kth", &partition, &partition},
    {"argpartition", "kth", &argpartition, &argpartition},
    {"topk", "k", &topk, &topk},
};

}  // namespace

void init_ops_indexing(nb::module_& m) {
  // A missing axis means the flattened array, as in MLX.
  for (const auto& op : kSort) {
    def_op(
        m, {op.name},
        [op](const array& a, std::optional<int> axis, StreamOrDevice s) {
          return axis ? op.along(a, *axis, s) : op.all(a, s);
        },
        "axis"_a.none() = -1);
  }
  for (const auto& op : kKth) {
    def_op(
        m, {op.name},
        [op](const array& a, int k, std::optional<int> axis, StreamOrDevice s) {
          return axis ? op.along(a, k, *axis, s) : op.all(a, k, s);
        },
        nb::arg(op.param), "axis"_a.none() = -1);
  }
  def_op(
      m, {"take"},
      [](const array& a, const std::variant<int, array>& indices, std::optional<int> axis,
         StreamOrDevice s) {
        return std::visit(
            [&](const auto& idx) { return axis ? take(a, idx, *axis, s) : take(a, idx, s); },
            indices);
      },
      "indices"_a, "axis"_a = nb::none());
  def_op(
      m, {"take_along_axis"},
      [](const array& a, const array& indices, std::optional<int> axis, StreamOrDevice s) {
        return axis ? take_along_axis(a, indices, *axis, s)
                    : take_along_axis(flatten(a, s), indices, 0, s);
      },
      "indices"_a, "axis"_a = nb::none());
  def_op(
      m, {"put_along_axis"},
      [](const array& a, const array& indices, const ScalarOrArray& values, std::optional<int> axis,
         StreamOrDevice s) {
        array v = values.get(a.dtype());
        if (axis) {
          return put_along_axis(a, indices, v, *axis, s);
        }
        return reshape(put_along_axis(flatten(a, s), indices, v, 0, s), a.shape(), s);
      },
      "indices"_a, "values"_a, "axis"_a = nb::none());
  m.def(
      "searchsorted",
      [](const array& sorted_sequence, const ScalarOrArray& values, const std::string& side,
         StreamOrDevice s) {
        return searchsorted(sorted_sequence, values.get(sorted_sequence.dtype()), side, s);
      },
      "sorted_sequence"_a, "values"_a, "side"_a = "left", nb::kw_only(), "stream"_a = nb::none(),
      docstring("searchsorted"));
  def_op(
      m, {"unique"},
      [](const array& a, int size, bool return_index, bool return_inverse, bool return_counts,
         const std::optional<ScalarOrArray>& fill_value, StreamOrDevice s) -> nb::object {
        std::optional<array> fill;
        if (fill_value) {
          fill = fill_value->get(a.dtype());
        }
        auto out = unique(a, size, return_index, return_inverse, return_counts, fill, s);
        if (out.size() == 1) {
          return nb::cast(out[0]);
        }
        return to_tuple(out);
      },
      "size"_a, "return_index"_a = false, "return_inverse"_a = false, "return_counts"_a = false,
      "fill_value"_a = nb::none());
}

}  // namespace mlx::core::python
