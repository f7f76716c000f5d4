// Convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, conv_general, convolve.
#include "mlx/utils.h"
#include "python/src/bindings.h"
#include "python/src/docstrings.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mlx::core::python {

namespace {

// An int or a tuple of `nd` ints, as `nd` ints.
std::vector<int> per_dim(const IntOrInts& v, int nd, const char* op, const char* what) {
  if (auto* i = std::get_if<int>(&v)) {
    return std::vector<int>(nd, *i);
  }
  auto& xs = std::get<std::vector<int>>(v);
  if (static_cast<int>(xs.size()) != nd) {
    throw std::invalid_argument(msg("[", op, "] ", what, " must be an int or a tuple of ", nd,
                                    " ints, got ", xs.size(), " values."));
  }
  return xs;
}

// The C++ argument type of a 2-D or 3-D op: a pair or a triple.
template <int ND>
using Dims = std::conditional_t<ND == 2, std::pair<int, int>, std::tuple<int, int, int>>;

template <int ND>
Dims<ND> dims(const IntOrInts& v, const char* op, const char* what) {
  auto xs = per_dim(v, ND, op, what);
  if constexpr (ND == 2) {
    return {xs[0], xs[1]};
  } else {
    return {xs[0], xs[1], xs[2]};
  }
}

template <int ND>
using ConvFn = array (*)(const array&, const array&, const Dims<ND>&, const Dims<ND>&,
                         const Dims<ND>&, int, StreamOrDevice);
template <int ND>
using ConvTransposeFn = array (*)(const array&, const array&, const Dims<ND>&, const Dims<ND>&,
                                  const Dims<ND>&, const Dims<ND>&, int, StreamOrDevice);

template <int ND>
void def_conv(nb::module_& m, const char* op, ConvFn<ND> fn) {
  m.def(
      op,
      [op, fn](const array& input, const array& weight, const IntOrInts& stride,
               const IntOrInts& padding, const IntOrInts& dilation, int groups, StreamOrDevice s) {
        return fn(input, weight, dims<ND>(stride, op, "stride"), dims<ND>(padding, op, "padding"),
                  dims<ND>(dilation, op, "dilation"), groups, s);
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "groups"_a = 1,
      nb::kw_only(), "stream"_a = nb::none(), docstring(op));
}

template <int ND>
void def_conv_transpose(nb::module_& m, const char* op, ConvTransposeFn<ND> fn) {
  m.def(
      op,
      [op, fn](const array& input, const array& weight, const IntOrInts& stride,
               const IntOrInts& padding, const IntOrInts& dilation, const IntOrInts& output_padding,
               int groups, StreamOrDevice s) {
        return fn(input, weight, dims<ND>(stride, op, "stride"), dims<ND>(padding, op, "padding"),
                  dims<ND>(dilation, op, "dilation"),
                  dims<ND>(output_padding, op, "output_padding"), groups, s);
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
      "output_padding"_a = 0, "groups"_a = 1, nb::kw_only(), "stream"_a = nb::none(),
      docstring(op));
}

// conv_general's padding: an int, one int per dimension, or (low, high) sequences.
using GeneralPadding =
    std::variant<int, std::vector<int>, std::pair<std::vector<int>, std::vector<int>>>;

}  // namespace

void init_ops_conv(nb::module_& m) {
  m.def(
      "conv1d",
      [](const array& input, const array& weight, int stride, int padding, int dilation, int groups,
         StreamOrDevice s) { return conv1d(input, weight, stride, padding, dilation, groups, s); },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "groups"_a = 1,
      nb::kw_only(), "stream"_a = nb::none(), docstring("conv1d"));
  def_conv<2>(m, "conv2d", &conv2d);
  def_conv<3>(m, "conv3d", &conv3d);
  m.def(
      "conv_transpose1d",
      [](const array& input, const array& weight, int stride, int padding, int dilation,
         int output_padding, int groups, StreamOrDevice s) {
        return conv_transpose1d(input, weight, stride, padding, dilation, output_padding, groups,
                                s);
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
      "output_padding"_a = 0, "groups"_a = 1, nb::kw_only(), "stream"_a = nb::none(),
      docstring("conv_transpose1d"));
  def_conv_transpose<2>(m, "conv_transpose2d", &conv_transpose2d);
  def_conv_transpose<3>(m, "conv_transpose3d", &conv_transpose3d);
  m.def(
      "conv_general",
      [](const array& input, const array& weight, const IntOrInts& stride,
         const GeneralPadding& padding, const IntOrInts& kernel_dilation,
         const IntOrInts& input_dilation, int groups, bool flip, StreamOrDevice s) {
        std::vector<int> lo, hi;
        if (auto* p = std::get_if<std::pair<std::vector<int>, std::vector<int>>>(&padding)) {
          lo = p->first;
          hi = p->second;
        } else if (auto* i = std::get_if<int>(&padding)) {
          lo = hi = {*i};
        } else {
          lo = hi = std::get<std::vector<int>>(padding);
        }
        return conv_general(input, weight, to_ints(stride), lo, hi, to_ints(kernel_dilation),
                            to_ints(input_dilation), groups, flip, s);
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "kernel_dilation"_a = 1,
      "input_dilation"_a = 1, "groups"_a = 1, "flip"_a = false, nb::kw_only(),
      "stream"_a = nb::none(), docstring("conv_general"));
  m.def(
      "convolve",
      [](const array& a, const array& v, const std::string& mode, StreamOrDevice s) {
        return convolve(a, v, mode, s);
      },
      "a"_a, "v"_a, "mode"_a = "full", nb::kw_only(), "stream"_a = nb::none(),
      docstring("convolve"));
}

}  // namespace mlx::core::python

void init_conv(nanobind::module_& m) { mlx::core::python::init_ops_conv(m); }
