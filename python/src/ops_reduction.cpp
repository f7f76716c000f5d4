// Reductions (sum, mean, var, argmax, logsumexp, ...), scans (cumsum, ...), softmax and trace.
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mlx::core::python {

namespace {

using ReduceFn = array (*)(const array&, const std::vector<int>&, bool, StreamOrDevice);
using MomentFn = array (*)(const array&, const std::vector<int>&, bool, int, StreamOrDevice);
using ArgReduceFn = array (*)(const array&, int, bool, StreamOrDevice);
using ArgReduceAllFn = array (*)(const array&, bool, StreamOrDevice);
using ScanFn = array (*)(const array&, int, bool, bool, StreamOrDevice);

const std::pair<const char*, ReduceFn> kReduce[] = {
    {"sum", &sum},   {"prod", &prod}, {"max", &max}, {"min", &min},
    {"mean", &mean}, {"all", &all},   {"any", &any}, {"logsumexp", &logsumexp},
};

const std::pair<const char*, MomentFn> kMoment[] = {{"var", &var}, {"std", &mlx::core::std}};

struct ArgReduce {
  const char* name;
  ArgReduceFn along;
  ArgReduceAllFn all;
};
const ArgReduce kArgReduce[] = {{"argmax", &argmax, &argmax}, {"argmin", &argmin, &argmin}};

const std::pair<const char*, ScanFn> kScan[] = {
    {"cumsum", &cumsum}, {"cumprod", &cumprod},           {"cummax", &cummax},
    {"cummin", &cummin}, {"logcumsumexp", &logcumsumexp},
};

}  // namespace

void init_ops_reduction(nb::module_& m) {
  for (const auto& [name, fn] : kReduce) {
    def_op(
        m, {name, true},
        [fn](const array& a, const OptAxes& axis, bool keepdims, StreamOrDevice s) {
          return fn(a, to_axes(axis, a.ndim()), keepdims, s);
        },
        "axis"_a = nb::none(), "keepdims"_a = false);
  }
  // `correction` is the array API's name for ddof; given, it wins.
  for (const auto& [name, fn] : kMoment) {
    def_op(
        m, {name, true},
        [fn](const array& a, const OptAxes& axis, bool keepdims, int ddof,
             std::optional<int> correction, StreamOrDevice s) {
          return fn(a, to_axes(axis, a.ndim()), keepdims, correction.value_or(ddof), s);
        },
        "axis"_a = nb::none(), "keepdims"_a = false, "ddof"_a = 0, nb::kw_only(),
        "correction"_a = nb::none());
  }
  for (const auto& r : kArgReduce) {
    def_op(
        m, {r.name, true},
        [r](const array& a, std::optional<int> axis, bool keepdims, StreamOrDevice s) {
          return axis ? r.along(a, *axis, keepdims, s) : r.all(a, keepdims, s);
        },
        "axis"_a = nb::none(), "keepdims"_a = false);
  }
  // Without an axis, scans run over the flattened array. cumsum and cumprod take a dtype to
  // accumulate in (the input is cast to it first).
  for (const auto& [name, fn] : kScan) {
    auto scan = [fn](const array& a, std::optional<int> axis, bool reverse, bool inclusive,
                     std::optional<Dtype> dtype, StreamOrDevice s) {
      array x = dtype ? astype(a, *dtype, s) : a;
      return axis ? fn(x, *axis, reverse, inclusive, s)
                  : fn(flatten(x, s), 0, reverse, inclusive, s);
    };
    if (fn == &cumsum || fn == &cumprod) {
      def_op(m, {name, true}, scan, "axis"_a = nb::none(), nb::kw_only(), "reverse"_a = false,
             "inclusive"_a = true, "dtype"_a = nb::none());
    } else {
      def_op(
          m, {name, true},
          [scan](const array& a, std::optional<int> axis, bool reverse, bool inclusive,
                 StreamOrDevice s) { return scan(a, axis, reverse, inclusive, std::nullopt, s); },
          "axis"_a = nb::none(), nb::kw_only(), "reverse"_a = false, "inclusive"_a = true);
    }
  }
  m.attr("cumulative_sum") = m.attr("cumsum");
  m.attr("cumulative_prod") = m.attr("cumprod");
  def_op(
      m, {"minmax"},
      [](const array& a, const OptAxes& axis, bool keepdims, StreamOrDevice s) {
        return to_tuple(minmax(a, to_axes(axis, a.ndim()), keepdims, s));
      },
      "axis"_a = nb::none(), "keepdims"_a = false);
  def_op(
      m, {"median"},
      [](const array& a, const OptAxes& axis, bool keepdims, StreamOrDevice s) {
        return median(a, to_axes(axis, a.ndim()), keepdims, s);
      },
      "axis"_a = nb::none(), "keepdims"_a = false);
  def_op(
      m, {"count_nonzero"},
      [](const array& a, const OptAxes& axis, bool keepdims, StreamOrDevice s) {
        return count_nonzero(a, to_axes(axis, a.ndim()), keepdims, s);
      },
      nb::kw_only(), "axis"_a = nb::none(), "keepdims"_a = false);
  def_op(
      m, {"softmax"},
      [](const array& a, const OptAxes& axis, bool precise, StreamOrDevice s) {
        return softmax(a, to_axes(axis, a.ndim()), precise, s);
      },
      "axis"_a = nb::none(), nb::kw_only(), "precise"_a = false);
  def_op(
      m, {"trace"},
      [](const array& a, int offset, int axis1, int axis2, std::optional<Dtype> dtype,
         StreamOrDevice s) {
        return dtype ? trace(a, offset, axis1, axis2, *dtype, s)
                     : trace(a, offset, axis1, axis2, s);
      },
      "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1, "dtype"_a = nb::none());
}

}  // namespace mlx::core::python
