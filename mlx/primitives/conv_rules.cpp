// Transform rules of Convolution and ConvWeightGrad. Both derivatives of a convolution are
// convolutions again (so they compose): the input's is a transposed convolution of the
// cotangent with the channel-swapped kernel, the weight's a convolution of the input with the
// cotangent in which the batch plays the channels (grouped by the forward groups). The weight
// derivative is the primitive ConvWeightGrad instead (whose own derivatives are convolutions)
// on GPU streams, where cuDNN has a pass for it, and for depthwise convolutions (also with a
// channel multiplier) on CPU streams, where it is a direct kernel (float64: im2col and a
// product). A strided convolution's input derivative is one transposed convolution (the stride
// as input dilation) on the GPU (cuDNN's backward-data pass) and for the CPU's depthwise
// kernels; elsewhere one convolution per stride phase.
#include <numeric>
#include <optional>

#include "mlx/ops.h"
#include "mlx/ops/conv.h"
#include "mlx/primitives/conv.h"
#include "mlx/transforms/rule_utils.h"

namespace mlx::core {

namespace {

std::vector<int> spatial_axes(int nd) {
  std::vector<int> axes(nd);
  std::iota(axes.begin(), axes.end(), 1);
  return axes;
}

// A stride above 1 without dilations: the input derivative as a transposed convolution would
// multiply the zeros between the stride-dilated cotangent's values.
bool strided_only(const ConvParams& p) {
  bool strided = false;
  for (size_t i = 0; i < p.stride.size(); ++i) {
    if (p.kernel_dilation[i] != 1 || p.input_dilation[i] != 1) {
      return false;
    }
    strided = strided || p.stride[i] > 1;
  }
  return strided;
}

// The input derivative of a strided convolution one stride phase at a time: the inputs
// i = r + s m of phase r receive the taps k = k0 + s t with k0 = (r + lo) mod s, from the
// cotangent at m + c0 - t (c0 = (r + lo - k0) / s). Each phase is a stride-1 correlation of the
// cotangent with the flipped sub-kernel, written into the phase's strided slice; together they
// cost what the forward convolution costs. w2 is the channel-swapped effective (unflipped)
// kernel (C, K..., O / groups).
array strided_input_cotangent(const ConvParams& p, const array& in, const array& w2, const array& g,
                              StreamOrDevice s) {
  int nd = static_cast<int>(in.ndim()) - 2;
  array result = zeros(in.shape(), g.dtype(), s);
  std::vector<int> phase(nd, 0);
  while (true) {
    Shape k_start(w2.ndim(), 0), k_stop = w2.shape(), k_step(w2.ndim(), 1);
    Shape o_start(in.ndim(), 0), o_stop = in.shape(), o_step(in.ndim(), 1);
    ConvParams q;
    q.groups = p.groups;
    q.flip = true;
    bool empty = false;
    for (int i = 0; i < nd; ++i) {
      int64_t st = p.stride[i], k = w2.shape(i + 1), n = in.shape(i + 1), x = g.shape(i + 1);
      int64_t r = phase[i], lo = p.padding_lo[i];
      int64_t k0 = ((r + lo) % st + st) % st;
      int64_t taps = k0 < k ? (k - 1 - k0) / st + 1 : 0;
      int64_t outputs = r < n ? (n - r + st - 1) / st : 0;
      int64_t c0 = (r + lo - k0) / st;
      empty = empty || taps == 0 || outputs == 0;
      k_start[i + 1] = static_cast<int>(k0);
      k_step[i + 1] = static_cast<int>(st);
      o_start[i + 1] = static_cast<int>(r);
      o_stop[i + 1] = static_cast<int>(r + st * (outputs - 1) + 1);
      o_step[i + 1] = static_cast<int>(st);
      int64_t pad_lo = taps - 1 - c0;
      q.stride.push_back(1);
      q.padding_lo.push_back(static_cast<int>(pad_lo));
      q.padding_hi.push_back(static_cast<int>(outputs + taps - 1 - pad_lo - x));
      q.kernel_dilation.push_back(1);
      q.input_dilation.push_back(1);
    }
    if (!empty) {
      array sub = slice(w2, k_start, k_stop, k_step, s);
      array part = detail::convolution(g, sub, q, s);
      result = slice_update(result, part, o_start, o_stop, o_step, s);
    }
    int i = nd - 1;
    while (i >= 0 && ++phase[i] == p.stride[i]) {
      phase[i--] = 0;
    }
    if (i < 0) {
      break;
    }
  }
  return result;
}

// One input and one output channel per group.
bool is_depthwise(const ConvParams& p, const array& wt) {
  return wt.shape(-1) == 1 && wt.shape(0) == p.groups;
}

bool on_gpu(StreamOrDevice s) { return to_stream(s).device.type == Device::gpu; }

// Whether the CPU's depthwise kernels (backend/cpu/conv_depthwise.h) run this convolution and
// its derivatives: float32 or a half type (they compute in float32).
bool cpu_depthwise(const ConvParams& p, const array& wt, StreamOrDevice s) {
  return !on_gpu(s) && is_depthwise(p, wt) && wt.dtype() != float64;
}

// Whether the weight derivative is ConvWeightGrad (see the file's comment); never with input
// dilation (a transposed convolution's weight derivative stays a convolution). On the CPU also
// with a channel multiplier (one input channel, several output channels per group), which
// runs the depthwise kernel over the input with its channels repeated.
bool weight_grad_primitive(const ConvParams& p, const array& wt, StreamOrDevice s) {
  for (int d : p.input_dilation) {
    if (d != 1) {
      return false;
    }
  }
  return on_gpu(s) || is_depthwise(p, wt) || (wt.shape(-1) == 1 && p.groups > 1);
}

array conv_weight_grad(const ConvParams& p, const array& in, const array& g, const Shape& kernel,
                       StreamOrDevice s) {
  Dtype dt = promote_types(in.dtype(), g.dtype());
  return array(conv_weight_grad_shape(p, kernel, in.shape(), g.shape()), dt,
               std::make_shared<ConvWeightGrad>(to_stream(s), p, kernel),
               {astype(in, dt, s), astype(g, dt, s)});
}

// d/d input: in (N, S..., C), weight (O, K..., C/G), cotangent g (N, X..., O).
array input_cotangent(const ConvParams& p, const array& in, const array& wt, const array& g,
                      StreamOrDevice s) {
  int nd = static_cast<int>(in.ndim()) - 2;
  int G = p.groups, O = wt.shape(0), Cg = wt.shape(-1), Og = O / G;
  // weight (G, Og, K..., Cg) -> (G, Cg, K..., Og) -> (C, K..., Og).
  Shape split{G, Og};
  for (int i = 0; i < nd; ++i) {
    split.push_back(wt.shape(i + 1));
  }
  split.push_back(Cg);
  std::vector<int> perm{0, nd + 2};
  for (int i = 0; i < nd; ++i) {
    perm.push_back(i + 2);
  }
  perm.push_back(1);
  Shape swapped{G * Cg};
  for (int i = 0; i < nd; ++i) {
    swapped.push_back(wt.shape(i + 1));
  }
  swapped.push_back(Og);
  array w2 = reshape(transpose(reshape(wt, split, s), perm, s), swapped, s);
  if (strided_only(p) && !on_gpu(s) && !cpu_depthwise(p, wt, s)) {
    return strided_input_cotangent(p, in, p.flip ? flip(w2, spatial_axes(nd), s) : w2, g, s);
  }
  ConvParams q;
  q.groups = G;
  q.flip = !p.flip;
  for (int i = 0; i < nd; ++i) {
    int64_t k = wt.shape(i + 1), d = p.kernel_dilation[i];
    int64_t x = g.shape(i + 1), n = in.shape(i + 1);
    int64_t lo = (k - 1) * d - p.padding_lo[i];
    int64_t dilated_g = x == 0 ? 0 : (x - 1) * p.stride[i] + 1;
    int64_t padded = (n - 1) * p.input_dilation[i] + (k - 1) * d + 1;
    q.stride.push_back(p.input_dilation[i]);
    q.padding_lo.push_back(static_cast<int>(lo));
    q.padding_hi.push_back(static_cast<int>(padded - lo - dilated_g));
    q.kernel_dilation.push_back(static_cast<int>(d));
    q.input_dilation.push_back(p.stride[i]);
  }
  return detail::convolution(g, w2, q, s);
}

// d/d weight.
array weight_cotangent(const ConvParams& p, const array& in, const array& wt, const array& g,
                       StreamOrDevice s) {
  int nd = static_cast<int>(in.ndim()) - 2;
  if (weight_grad_primitive(p, wt, s)) {
    return conv_weight_grad(p, in, g, Shape(wt.shape().begin() + 1, wt.shape().end() - 1), s);
  }
  int G = p.groups, N = in.shape(0), O = wt.shape(0), Cg = wt.shape(-1), Og = O / G;
  // in (N, S..., G, Cg) -> (Cg, S..., G, N) -> (Cg, S..., G * N).
  Shape in_split{N};
  for (int i = 0; i < nd; ++i) {
    in_split.push_back(in.shape(i + 1));
  }
  in_split.push_back(G);
  in_split.push_back(Cg);
  std::vector<int> in_perm{nd + 2};
  for (int i = 0; i < nd; ++i) {
    in_perm.push_back(i + 1);
  }
  in_perm.push_back(nd + 1);
  in_perm.push_back(0);
  Shape in_shape(in_split.begin() + 1, in_split.end() - 2);
  in_shape.insert(in_shape.begin(), Cg);
  in_shape.push_back(G * N);
  array in2 = reshape(transpose(reshape(in, in_split, s), in_perm, s), in_shape, s);
  // g (N, X..., G, Og) -> (G, Og, X..., N) -> (G * Og, X..., N).
  Shape g_split{N};
  for (int i = 0; i < nd; ++i) {
    g_split.push_back(g.shape(i + 1));
  }
  g_split.push_back(G);
  g_split.push_back(Og);
  std::vector<int> g_perm{nd + 1, nd + 2};
  for (int i = 0; i < nd; ++i) {
    g_perm.push_back(i + 1);
  }
  g_perm.push_back(0);
  Shape g_shape(g_split.begin() + 1, g_split.end() - 2);
  g_shape.insert(g_shape.begin(), O);
  g_shape.push_back(N);
  array g2 = reshape(transpose(reshape(g, g_split, s), g_perm, s), g_shape, s);
  ConvParams q;
  q.groups = G;
  for (int i = 0; i < nd; ++i) {
    int64_t k = wt.shape(i + 1), d = p.kernel_dilation[i];
    int64_t x = g.shape(i + 1), n = in.shape(i + 1);
    int64_t dilated_in = (n - 1) * p.input_dilation[i] + 1;
    int64_t padded = (k - 1) * d + (x - 1) * p.stride[i] + 1;
    q.stride.push_back(static_cast<int>(d));
    q.padding_lo.push_back(p.padding_lo[i]);
    q.padding_hi.push_back(static_cast<int>(padded - p.padding_lo[i] - dilated_in));
    q.kernel_dilation.push_back(p.stride[i]);
    q.input_dilation.push_back(p.input_dilation[i]);
  }
  // (Cg, K..., O) -> (O, K..., Cg).
  array out = detail::convolution(in2, g2, q, s);
  std::vector<int> perm{nd + 1};
  for (int i = 0; i < nd; ++i) {
    perm.push_back(i + 1);
  }
  perm.push_back(0);
  out = transpose(out, perm, s);
  return p.flip ? flip(out, spatial_axes(nd), s) : out;
}

// The jvp of f bilinear in (a, b): f(ta, b) + f(a, tb), over the tangents given.
template <typename F>
array bilinear_jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                   const std::vector<int>& argnums, StreamOrDevice s, F&& f) {
  std::optional<array> out;
  for (size_t k = 0; k < argnums.size(); ++k) {
    array term = argnums[k] == 0 ? f(tangents[k], primals[1]) : f(primals[0], tangents[k]);
    out = out ? add(*out, term, s) : term;
  }
  return *out;
}

}  // namespace

std::vector<array> Convolution::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  return {bilinear_jvp(primals, tangents, argnums, stream(), [&](const array& a, const array& b) {
    return detail::convolution(a, b, params_, stream());
  })};
}

std::vector<array> Convolution::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const array& in = primals[0];
  const array& wt = primals[1];
  const array& g = cotangents[0];
  std::vector<array> out;
  for (int arg : argnums) {
    if (g.size() == 0 || in.size() == 0) {
      out.push_back(zeros_like(primals[arg], stream()));
      continue;
    }
    out.push_back(arg == 0 ? input_cotangent(params_, in, wt, g, stream())
                           : weight_cotangent(params_, in, wt, g, stream()));
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> Convolution::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  StreamOrDevice s = stream();
  array in = detail::batch_first(inputs[0], axes[0]);
  array wt = detail::batch_first(inputs[1], axes[1]);
  int nd = static_cast<int>(params_.stride.size());
  if (axes[1] < 0) {
    // (B, N, S..., C) -> (B * N, S..., C).
    int B = in.shape(0);
    Shape merged(in.shape().begin() + 1, in.shape().end());
    merged[0] *= B;
    array out = detail::convolution(reshape(in, merged, s), wt, params_, s);
    Shape split = out.shape();
    split[0] = B;
    split.insert(split.begin() + 1, in.shape(1));
    return {{reshape(out, split, s)}, {0}};
  }
  int B = wt.shape(0);
  if (axes[0] < 0) {
    Shape b_shape = in.shape();
    b_shape.insert(b_shape.begin(), B);
    in = broadcast_to(in, b_shape, s);
  }
  // Each batch element becomes its own set of groups: input (N, S..., B * C) and weight
  // (B * O, K..., Cg) with B * groups groups.
  in = moveaxis(in, 0, nd + 1, s);
  Shape in_shape(in.shape().begin(), in.shape().end() - 1);
  in_shape.back() *= in.shape(-1);
  Shape w_shape(wt.shape().begin() + 1, wt.shape().end());
  w_shape[0] *= B;
  ConvParams q = params_;
  q.groups *= B;
  array out = detail::convolution(reshape(in, in_shape, s), reshape(wt, w_shape, s), q, s);
  Shape split(out.shape().begin(), out.shape().end() - 1);
  split.push_back(B);
  split.push_back(wt.shape(1));
  return {{reshape(out, split, s)}, {nd + 1}};
}

// ConvWeightGrad(in, g) is bilinear: with the weight's cotangent c, <c, dw(in, g)> =
// <g, conv(in, c)>, so its input derivative is the convolution's input derivative for weight c
// and its cotangent derivative the convolution of in with c.
std::vector<array> ConvWeightGrad::jvp(const std::vector<array>& primals,
                                       const std::vector<array>& tangents,
                                       const std::vector<int>& argnums) {
  return {bilinear_jvp(primals, tangents, argnums, stream(), [&](const array& a, const array& b) {
    return conv_weight_grad(params_, a, b, kernel_, stream());
  })};
}

std::vector<array> ConvWeightGrad::vjp(const std::vector<array>& primals,
                                       const std::vector<array>& cotangents,
                                       const std::vector<int>& argnums, const std::vector<array>&) {
  const array& in = primals[0];
  const array& g = primals[1];
  const array c = astype(cotangents[0], in.dtype(), stream());
  std::vector<array> out;
  for (int arg : argnums) {
    out.push_back(arg == 0 ? input_cotangent(params_, in, c, g, stream())
                           : detail::convolution(in, c, params_, stream()));
  }
  return out;
}

// Each batch element's channels become groups of their own: (N, S..., B * C) and
// (N, X..., B * O) with B * groups groups, the result (B * O, K..., C / groups) split again.
std::pair<std::vector<array>, std::vector<int>> ConvWeightGrad::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  StreamOrDevice s = stream();
  int B = axes[0] >= 0 ? inputs[0].shape(axes[0]) : inputs[1].shape(axes[1]);
  std::vector<array> merged;
  for (size_t i = 0; i < 2; ++i) {
    array x = detail::batch_first(inputs[i], axes[i]);
    if (axes[i] < 0) {
      Shape b_shape = x.shape();
      b_shape.insert(b_shape.begin(), B);
      x = broadcast_to(x, b_shape, s);
    }
    x = moveaxis(x, 0, static_cast<int>(x.ndim()) - 2, s);
    Shape shape(x.shape().begin(), x.shape().end() - 1);
    shape.back() *= x.shape(-1);
    merged.push_back(reshape(x, shape, s));
  }
  ConvParams q = params_;
  q.groups *= B;
  array out = conv_weight_grad(q, merged[0], merged[1], kernel_, s);
  Shape split = out.shape();
  split[0] /= B;
  split.insert(split.begin(), B);
  return {{reshape(out, split, s)}, {0}};
}

}  // namespace mlx::core
