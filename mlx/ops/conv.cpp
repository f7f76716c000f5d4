#include "mlx/ops/conv.h"

#include <algorithm>
#include <limits>

#include "mlx/ops/creation.h"
#include "mlx/ops/linalg.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/conv.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// A per-dimension argument: empty gives `fill`, one value applies to every dimension.
std::vector<int> expand(std::vector<int> v, int nd, int fill, const char* what) {
  if (v.empty()) {
    return std::vector<int>(nd, fill);
  }
  if (v.size() == 1 && nd != 1) {
    return std::vector<int>(nd, v[0]);
  }
  if (static_cast<int>(v.size()) != nd) {
    throw std::invalid_argument(msg("[conv] Invalid ", what, " ", Shape(v), " for ", nd,
                                    " spatial dimensions: expected ", nd, " values."));
  }
  return v;
}

void check_positive(const std::vector<int>& v, const char* what) {
  for (int x : v) {
    if (x < 1) {
      throw std::invalid_argument(msg("[conv] ", what, " must be positive, got ", Shape(v), "."));
    }
  }
}

// Checks ranks, channels, groups and dtypes; returns the output dtype.
Dtype check_operands(const array& in, const array& wt, const ConvParams& p) {
  int nd = static_cast<int>(p.stride.size());
  if (in.ndim() < 3 || in.ndim() > 5) {
    throw std::invalid_argument(
        msg("[conv] Input must have 1, 2 or 3 spatial dimensions (rank 3 to 5, channels last), "
            "got input with shape ",
            in.shape(), "."));
  }
  if (wt.ndim() != in.ndim()) {
    throw std::invalid_argument(msg("[conv] Input with shape ", in.shape(),
                                    " and weight with shape ", wt.shape(),
                                    " must have the same rank."));
  }
  if (nd != static_cast<int>(in.ndim()) - 2) {
    throw std::invalid_argument(
        msg("[conv] Got ", nd, " spatial parameters for input with shape ", in.shape(), "."));
  }
  if (p.groups < 1) {
    throw std::invalid_argument(msg("[conv] groups must be positive, got ", p.groups, "."));
  }
  int C = in.shape(-1), O = wt.shape(0);
  if (C % p.groups != 0) {
    throw std::invalid_argument(msg("[conv] The number of input channels (", C,
                                    ") must be divisible by groups (", p.groups, ")."));
  }
  if (O % p.groups != 0) {
    throw std::invalid_argument(msg("[conv] The number of output channels (", O,
                                    ") must be divisible by groups (", p.groups, ")."));
  }
  if (wt.shape(-1) * p.groups != C) {
    throw std::invalid_argument(msg("[conv] Expected weight with ", C / p.groups,
                                    " input channels (input channels ", C, " / groups ", p.groups,
                                    "), got weight with shape ", wt.shape(), "."));
  }
  Dtype dt = promote_types(in.dtype(), wt.dtype());
  if (!is_floating_point(dt)) {
    throw std::invalid_argument(
        msg("[conv] Only real floating point types are supported, got input of type ", in.dtype(),
            " and weight of type ", wt.dtype(), "."));
  }
  return dt;
}

// A 1x1 kernel without padding, input dilation or groups: each output pixel is its input
// pixel's channels times the weight, so the convolution is one product, (pixels, C) times the
// weight's (O, C) transposed, after subsampling for a stride. Every device's GEMM then runs
// it and its gradients (ResNet's 1x1 layers are most of its convolutions), with no
// convolution library's per-call setup.
bool is_pointwise(const array& input, const array& weight, const ConvParams& p) {
  if (p.groups != 1 || input.shape(-1) == 0) {
    return false;
  }
  int64_t pixels = 1;
  for (size_t i = 0; i < p.stride.size(); ++i) {
    if (weight.shape(i + 1) != 1 || p.padding_lo[i] != 0 || p.padding_hi[i] != 0 ||
        p.input_dilation[i] != 1) {
      return false;
    }
    pixels *= (input.shape(i + 1) + p.stride[i] - 1) / p.stride[i];
  }
  return pixels * input.shape(0) <= std::numeric_limits<int32_t>::max();
}

array pointwise_convolution(const array& input, const array& weight, const ConvParams& p,
                            StreamOrDevice s) {
  Dtype dt = promote_types(input.dtype(), weight.dtype());
  array x = astype(input, dt, s);
  if (std::any_of(p.stride.begin(), p.stride.end(), [](int v) { return v > 1; })) {
    Shape strides(x.ndim(), 1);
    std::copy(p.stride.begin(), p.stride.end(), strides.begin() + 1);
    x = slice(x, Shape(x.ndim(), 0), x.shape(), std::move(strides), s);
  }
  const int C = x.shape(-1), O = weight.shape(0);
  Shape out_shape = x.shape();
  out_shape.back() = O;
  array rows = reshape(x, {static_cast<int>(x.size() / C), C}, s);
  array w = reshape(astype(weight, dt, s), {O, C}, s);
  return reshape(matmul(rows, transpose(w, s), s), std::move(out_shape), s);
}

}  // namespace

namespace detail {

array convolution(const array& input, const array& weight, const ConvParams& params,
                  StreamOrDevice s) {
  Dtype dt = check_operands(input, weight, params);
  Shape out = conv_output_shape(params, input.shape(), weight.shape());
  return array(std::move(out), dt, std::make_shared<Convolution>(to_stream(s), params),
               {astype(input, dt, s), astype(weight, dt, s)});
}

}  // namespace detail

array conv_general(array input, array weight, std::vector<int> stride, std::vector<int> padding_lo,
                   std::vector<int> padding_hi, std::vector<int> kernel_dilation,
                   std::vector<int> input_dilation, int groups, bool flip, StreamOrDevice s) {
  if (input.ndim() < 3 || input.ndim() > 5) {
    throw std::invalid_argument(
        msg("[conv] Input must have 1, 2 or 3 spatial dimensions (rank 3 to 5, channels last), "
            "got input with shape ",
            input.shape(), "."));
  }
  int nd = static_cast<int>(input.ndim()) - 2;
  if (padding_hi.empty()) {
    padding_hi = padding_lo;
  }
  ConvParams p{expand(std::move(stride), nd, 1, "stride"),
               expand(std::move(padding_lo), nd, 0, "padding"),
               expand(std::move(padding_hi), nd, 0, "padding"),
               expand(std::move(kernel_dilation), nd, 1, "kernel dilation"),
               expand(std::move(input_dilation), nd, 1, "input dilation"),
               groups,
               flip};
  check_positive(p.stride, "Stride");
  check_positive(p.kernel_dilation, "Kernel dilation");
  check_positive(p.input_dilation, "Input dilation");
  check_operands(input, weight, p);
  for (int i = 0; i < nd; ++i) {
    int64_t in = input.shape(i + 1), k = weight.shape(i + 1);
    int64_t dilated = in == 0 ? 0 : (in - 1) * p.input_dilation[i] + 1;
    int64_t padded = dilated + p.padding_lo[i] + p.padding_hi[i];
    int64_t window = (k - 1) * p.kernel_dilation[i] + 1;
    if (k < 1 || padded < window) {
      throw std::invalid_argument(
          msg("[conv] The dilated kernel (size ", window, ") does not fit the padded input (size ",
              padded, ") along spatial dimension ", i, " (input shape ", input.shape(),
              ", weight shape ", weight.shape(), ", padding (", p.padding_lo[i], ", ",
              p.padding_hi[i], "), kernel dilation ", p.kernel_dilation[i], ", input dilation ",
              p.input_dilation[i], ")."));
    }
  }
  if (is_pointwise(input, weight, p)) {
    return pointwise_convolution(input, weight, p, s);
  }
  return detail::convolution(input, weight, p, s);
}

array conv1d(const array& input, const array& weight, int stride, int padding, int dilation,
             int groups, StreamOrDevice s) {
  if (input.ndim() != 3) {
    throw std::invalid_argument(
        msg("[conv1d] Expected input of shape (N, L, C), got ", input.shape(), "."));
  }
  return conv_general(input, weight, {stride}, {padding}, {padding}, {dilation}, {1}, groups, false,
                      s);
}

array conv2d(const array& input, const array& weight, const std::pair<int, int>& stride,
             const std::pair<int, int>& padding, const std::pair<int, int>& dilation, int groups,
             StreamOrDevice s) {
  if (input.ndim() != 4) {
    throw std::invalid_argument(
        msg("[conv2d] Expected input of shape (N, H, W, C), got ", input.shape(), "."));
  }
  return conv_general(input, weight, {stride.first, stride.second}, {padding.first, padding.second},
                      {padding.first, padding.second}, {dilation.first, dilation.second}, {1, 1},
                      groups, false, s);
}

array conv3d(const array& input, const array& weight, const std::tuple<int, int, int>& stride,
             const std::tuple<int, int, int>& padding, const std::tuple<int, int, int>& dilation,
             int groups, StreamOrDevice s) {
  if (input.ndim() != 5) {
    throw std::invalid_argument(
        msg("[conv3d] Expected input of shape (N, D, H, W, C), got ", input.shape(), "."));
  }
  auto v = [](const std::tuple<int, int, int>& t) {
    return std::vector<int>{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  };
  auto pad = v(padding);
  return conv_general(input, weight, v(stride), pad, pad, v(dilation), {1, 1, 1}, groups, false, s);
}

namespace {

// A transposed convolution is the convolution of the stride-dilated input with the flipped
// kernel, padded by dilation * (k - 1) - padding (plus output_padding on the high side).
array conv_transpose_general(const array& input, const array& weight, std::vector<int> stride,
                             std::vector<int> padding, std::vector<int> dilation,
                             std::vector<int> output_padding, int groups, const char* op,
                             StreamOrDevice s) {
  int nd = static_cast<int>(stride.size());
  if (static_cast<int>(input.ndim()) != nd + 2 || static_cast<int>(weight.ndim()) != nd + 2) {
    throw std::invalid_argument(msg("[", op, "] Expected input and weight of rank ", nd + 2,
                                    ", got input with shape ", input.shape(),
                                    " and weight with shape ", weight.shape(), "."));
  }
  std::vector<int> lo(nd), hi(nd);
  for (int i = 0; i < nd; ++i) {
    if (padding[i] < 0 || output_padding[i] < 0) {
      throw std::invalid_argument(msg("[", op,
                                      "] padding and output_padding must be non-negative, got ",
                                      Shape(padding), " and ", Shape(output_padding), "."));
    }
    if (output_padding[i] >= std::max(stride[i], dilation[i])) {
      throw std::invalid_argument(msg("[", op, "] output_padding ", Shape(output_padding),
                                      " must be smaller than stride ", Shape(stride),
                                      " or dilation ", Shape(dilation), "."));
    }
    lo[i] = dilation[i] * (weight.shape(i + 1) - 1) - padding[i];
    hi[i] = lo[i] + output_padding[i];
  }
  return conv_general(input, weight, std::vector<int>(nd, 1), lo, hi, dilation, stride, groups,
                      true, s);
}

}  // namespace

array conv_transpose1d(const array& input, const array& weight, int stride, int padding,
                       int dilation, int output_padding, int groups, StreamOrDevice s) {
  return conv_transpose_general(input, weight, {stride}, {padding}, {dilation}, {output_padding},
                                groups, "conv_transpose1d", s);
}

array conv_transpose2d(const array& input, const array& weight, const std::pair<int, int>& stride,
                       const std::pair<int, int>& padding, const std::pair<int, int>& dilation,
                       const std::pair<int, int>& output_padding, int groups, StreamOrDevice s) {
  auto v = [](const std::pair<int, int>& t) { return std::vector<int>{t.first, t.second}; };
  return conv_transpose_general(input, weight, v(stride), v(padding), v(dilation),
                                v(output_padding), groups, "conv_transpose2d", s);
}

array conv_transpose3d(const array& input, const array& weight,
                       const std::tuple<int, int, int>& stride,
                       const std::tuple<int, int, int>& padding,
                       const std::tuple<int, int, int>& dilation,
                       const std::tuple<int, int, int>& output_padding, int groups,
                       StreamOrDevice s) {
  auto v = [](const std::tuple<int, int, int>& t) {
    return std::vector<int>{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  };
  return conv_transpose_general(input, weight, v(stride), v(padding), v(dilation),
                                v(output_padding), groups, "conv_transpose3d", s);
}

array convolve(const array& a, const array& v, const std::string& mode, StreamOrDevice s) {
  if (a.ndim() != 1 || v.ndim() != 1) {
    throw std::invalid_argument(
        msg("[convolve] Inputs must be 1-D, got shapes ", a.shape(), " and ", v.shape(), "."));
  }
  if (a.size() == 0 || v.size() == 0) {
    throw std::invalid_argument("[convolve] Inputs cannot be empty.");
  }
  // NumPy convolves the longer input with the shorter one.
  const array& x = a.size() >= v.size() ? a : v;
  const array& k = a.size() >= v.size() ? v : a;
  int m = k.shape(0);
  int lo, hi;
  if (mode == "full") {
    lo = hi = m - 1;
  } else if (mode == "same") {
    hi = (m - 1) / 2;
    lo = m - 1 - hi;
  } else if (mode == "valid") {
    lo = hi = 0;
  } else {
    throw std::invalid_argument(
        msg("[convolve] Invalid mode '", mode, "': expected 'full', 'same' or 'valid'."));
  }
  array in = reshape(x, {1, x.shape(0), 1}, s);
  array w = reshape(k, {1, m, 1}, s);
  array out = conv_general(in, w, {1}, {lo}, {hi}, {1}, {1}, 1, true, s);
  return reshape(out, {out.shape(1)}, s);
}

}  // namespace mlx::core
