// The cuDNN mapping of convolutions (backend/common/cudnn_conv_plan.h), without cuDNN or a GPU:
// each plan runs through a naive CPU reference of cuDNN's documented semantics
// (cudnnConvolutionForward, cudnnConvolutionBackwardData, packed NHWC tensors, symmetric
// padding, CUDNN_CONVOLUTION reversing the filter) and must give conv_general's result, over
// random geometries and the convolutions the derivatives build.
#include "mlx/backend/common/cudnn_conv_plan.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>

#include "mlx/mlx.h"
#include "test_utils.h"

namespace mlx::core::test {
namespace {

using Index = std::vector<int>;

// A packed channels-last tensor with cuDNN's dimensions (N, C, spatial...).
struct Tensor {
  std::vector<int> dims;
  std::vector<double> v;
  explicit Tensor(std::vector<int> d) : dims(std::move(d)) {
    int64_t n = 1;
    for (int x : dims) {
      n *= x;
    }
    v.assign(n, 0.0);
  }
  int64_t offset(const Index& idx) const {
    auto strides = cudnn_nhwc_strides(dims);
    int64_t o = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      o += idx[i] * strides[i];
    }
    return o;
  }
  double& at(const Index& idx) { return v[offset(idx)]; }
  double at(const Index& idx) const { return v[offset(idx)]; }
};

void for_each_index(const std::vector<int>& dims, const std::function<void(const Index&)>& f) {
  for (int d : dims) {
    if (d <= 0) {
      return;
    }
  }
  Index idx(dims.size(), 0);
  while (true) {
    f(idx);
    int i = static_cast<int>(dims.size()) - 1;
    while (i >= 0 && ++idx[i] == dims[i]) {
      idx[i--] = 0;
    }
    if (i < 0) {
      return;
    }
  }
}

std::vector<int> spatial(const std::vector<int>& dims) {
  return std::vector<int>(dims.begin() + 2, dims.end());
}

// Every term of cuDNN's forward convolution of an x of sizes `x_dims` into a y of sizes
// `y_dims` with filter w: f(yi, xi, wi) for y[n, k, p], the group's channel c and window
// position r, where xi = (n, g Cg + c, p stride + r dilation - pad) lies inside x and
// wi = (k, c, the tap: r, reversed in CUDNN_CONVOLUTION mode). Also checks cuDNN's rules:
// y's sizes are the forward output sizes of x's, channels match per group.
void for_each_term(const CudnnConvPlan& plan, const std::vector<int>& x_dims,
                   const std::vector<int>& y_dims, const Tensor& w,
                   const std::function<void(const Index&, const Index&, const Index&)>& f) {
  const int G = plan.groups, K = w.dims[0], Cg = w.dims[1], cnd = x_dims.size() - 2;
  EXPECT_EQ(x_dims[1], Cg * G);
  EXPECT_EQ(K % G, 0);
  EXPECT_EQ(y_dims[0], x_dims[0]);
  EXPECT_EQ(y_dims[1], K);
  for (int i = 0; i < cnd; ++i) {
    EXPECT_EQ(y_dims[i + 2], cudnn_conv_out_size(x_dims[i + 2], w.dims[i + 2], plan.pad[i],
                                                 plan.stride[i], plan.dilation[i]))
        << "cuDNN's output size along spatial dimension " << i;
  }
  for_each_index(y_dims, [&](const Index& yi) {
    const int n = yi[0], k = yi[1], g = k / (K / G);
    for_each_index(spatial(w.dims), [&](const Index& r) {
      Index xi{n, 0}, wi{k, 0};
      for (int i = 0; i < cnd; ++i) {
        int pos = yi[i + 2] * plan.stride[i] + r[i] * plan.dilation[i] - plan.pad[i];
        if (pos < 0 || pos >= x_dims[i + 2]) {
          return;
        }
        xi.push_back(pos);
        wi.push_back(plan.convolution_mode ? w.dims[i + 2] - 1 - r[i] : r[i]);
      }
      for (int c = 0; c < Cg; ++c) {
        xi[1] = g * Cg + c;
        wi[1] = c;
        f(yi, xi, wi);
      }
    });
  });
}

// cudnnConvolutionForward: y = the sum of the terms x[xi] w[wi] into y[yi].
Tensor reference_forward(const CudnnConvPlan& plan, const Tensor& x, const Tensor& w) {
  Tensor y(plan.y_dims);
  for_each_term(plan, x.dims, y.dims, w, [&](const Index& yi, const Index& xi, const Index& wi) {
    y.at(yi) += x.at(xi) * w.at(wi);
  });
  return y;
}

// cudnnConvolutionBackwardData: its adjoint, dx (the plan's y) = the sum of dy[yi] w[wi] into
// dx[xi], dy being the forward output of dx.
Tensor reference_backward_data(const CudnnConvPlan& plan, const Tensor& dy, const Tensor& w) {
  Tensor dx(plan.y_dims);
  for_each_term(plan, dx.dims, dy.dims, w, [&](const Index& yi, const Index& xi, const Index& wi) {
    dx.at(xi) += dy.at(yi) * w.at(wi);
  });
  return dx;
}

// Our (N, spatial..., C) shape in cuDNN's order with the plan's unit dimensions.
std::vector<int> cudnn_dims(const Shape& s, size_t cnd) {
  std::vector<int> d{s[0], s.back()};
  for (size_t i = s.size() - 2; i < cnd; ++i) {
    d.push_back(1);
  }
  d.insert(d.end(), s.begin() + 1, s.end() - 1);
  return d;
}

// What the GPU backend does with a plan, with the reference in place of cuDNN: crop the
// input, transpose the weight, run the operation, take our output's window of y. Returns our
// output's elements in row-major order.
std::vector<double> run_plan(const CudnnConvPlan& plan, const array& in, const array& wt,
                             int groups) {
  const size_t cnd = plan.x_dims.size() - 2;
  // Our input and weight are packed channels-last tensors already.
  Tensor full(cudnn_dims(in.shape(), cnd));
  full.v = to_vector(in);
  Tensor x(plan.x_dims);
  for_each_index(x.dims, [&](const Index& i) {
    Index src = i;
    for (size_t d = 0; d < cnd; ++d) {
      src[d + 2] += plan.crop[d];
    }
    x.at(i) = full.at(src);
  });
  Tensor ours(cudnn_dims(wt.shape(), cnd));
  ours.v = to_vector(wt);
  Tensor w(plan.w_dims);
  if (plan.op == CudnnConvPlan::Op::backward_data && !plan.transpose_weight) {
    // The per-group transpose would move nothing: our weight's memory is the filter.
    EXPECT_EQ(w.v.size(), ours.v.size());
    w.v = ours.v;
  } else {
    for_each_index(w.dims, [&](const Index& i) {
      Index src = i;
      if (plan.transpose_weight) {
        // w[g Cg + c, r, o] = ours[g Og + o, r, c].
        const int Cg = ours.dims[1], Og = w.dims[1], g = i[0] / Cg;
        src[0] = g * Og + i[1];
        src[1] = i[0] - g * Cg;
      }
      w.at(i) = ours.at(src);
    });
  }
  EXPECT_EQ(plan.groups, groups);
  Tensor y = plan.op == CudnnConvPlan::Op::forward ? reference_forward(plan, x, w)
                                                   : reference_backward_data(plan, x, w);
  // Our output j is y's j + keep, zero outside y.
  Tensor out(plan.out_dims);
  for_each_index(out.dims, [&](const Index& i) {
    Index src = i;
    for (size_t d = 0; d < cnd; ++d) {
      src[d + 2] += plan.keep[d];
      const bool inside = src[d + 2] >= 0 && src[d + 2] < y.dims[d + 2];
      EXPECT_EQ(inside, i[d + 2] >= plan.window_begin(d) && i[d + 2] < plan.window_end(d));
      if (!inside) {
        return;
      }
    }
    out.at(i) = y.at(src);
  });
  return out.v;
}

void expect_vectors_close(const std::vector<double>& got, const std::vector<double>& want,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-9 * (1 + std::abs(want[i]))) << what << " at flat index " << i;
  }
}

std::string describe(const ConvParams& p, const Shape& in, const Shape& wt) {
  return msg("in ", in, " weight ", wt, " stride ", Shape(p.stride), " lo ", Shape(p.padding_lo),
             " hi ", Shape(p.padding_hi), " kdil ", Shape(p.kernel_dilation), " idil ",
             Shape(p.input_dilation), " groups ", p.groups, " flip ", p.flip);
}

// A Convolution node's parameters and operands, taken before evaluation detaches it.
struct ConvNode {
  ConvParams p;
  array in, wt, out;
};

// The Convolution node of conv_general's arguments, which it checks (throwing where invalid):
// 1x1 kernels without padding included, which conv_general itself runs as a matmul.
array convolution_node(const array& x, const array& w, const ConvParams& p) {
  conv_general(x, w, p.stride, p.padding_lo, p.padding_hi, p.kernel_dilation, p.input_dilation,
               p.groups, p.flip);
  return detail::convolution(x, w, p);
}

ConvNode capture(const array& conv) {
  auto* prim = dynamic_cast<const Convolution*>(&conv.primitive());
  EXPECT_NE(prim, nullptr);
  return {prim->params(), conv.inputs()[0], conv.inputs()[1], conv};
}

// Plans the convolution, runs the plan and compares with the node's own (CPU) result.
// Returns the plan.
CudnnConvPlan check_node(ConvNode node) {
  eval({node.in, node.wt, node.out});
  const ConvParams& p = node.p;
  CudnnConvPlan plan =
      plan_cudnn_conv(p, node.in.shape(), node.wt.shape(), node.out.shape(), float32);
  const std::string what = describe(p, node.in.shape(), node.wt.shape());
  if (plan.op == CudnnConvPlan::Op::fallback) {
    EXPECT_FALSE(plan.reason.empty()) << what;
    return plan;
  }
  EXPECT_TRUE(plan.reason.empty()) << what;
  expect_vectors_close(run_plan(plan, node.in, node.wt, p.groups), to_vector(node.out), what);
  return plan;
}

// What the checked plans did.
struct Counts {
  int forward = 0, backward_data = 0, fallback = 0;
  int temp_output = 0, crop = 0, shifted = 0, zero_fill = 0, untransposed = 0;
  std::set<std::string> reasons;  // of the fallbacks
  void add(const CudnnConvPlan& plan) {
    if (plan.op == CudnnConvPlan::Op::fallback) {
      ++fallback;
      reasons.insert(plan.reason);
      return;
    }
    ++(plan.op == CudnnConvPlan::Op::forward ? forward : backward_data);
    temp_output += plan.temp_output();
    crop += plan.crops_input();
    shifted += std::any_of(plan.keep.begin(), plan.keep.end(), [](int k) { return k > 0; });
    zero_fill += plan.zero_fill();
    untransposed += plan.op == CudnnConvPlan::Op::backward_data && !plan.transpose_weight;
  }
};

int uniform(std::mt19937& gen, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(gen);
}

// A random valid convolution (float64, on the CPU), or nullopt when the drawn geometry is
// rejected.
std::optional<ConvNode> random_conv(std::mt19937& gen, bool input_dilation) {
  const int nd = uniform(gen, 1, 3);
  const int groups = uniform(gen, 1, 3), Cg = uniform(gen, 1, 3), Og = uniform(gen, 1, 3);
  Shape in{uniform(gen, 1, 2)}, wt{groups * Og};
  ConvParams p;
  p.groups = groups;
  p.flip = uniform(gen, 0, 1) == 1;
  for (int i = 0; i < nd; ++i) {
    const int small = nd == 3 ? 5 : 9;
    in.push_back(uniform(gen, 1, small));
    wt.push_back(uniform(gen, 1, nd == 3 ? 3 : 4));
    p.stride.push_back(input_dilation ? (uniform(gen, 0, 3) == 0 ? 2 : 1) : uniform(gen, 1, 3));
    p.kernel_dilation.push_back(uniform(gen, 1, 3));
    p.input_dilation.push_back(input_dilation ? uniform(gen, 1, 3) : 1);
    const int k = (wt.back() - 1) * p.kernel_dilation.back();
    p.padding_lo.push_back(uniform(gen, -2, k + 2));
    p.padding_hi.push_back(uniform(gen, -2, k + 2));
  }
  in.push_back(groups * Cg);
  wt.push_back(Cg);
  try {
    array x = random_array(in, float64, -1, 1, gen());
    array w = random_array(wt, float64, -1, 1, gen());
    return capture(convolution_node(x, w, p));
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// Checks random convolutions (with input dilation or without) until `want` of them planned
// `op`.
Counts check_random(uint32_t seed, bool input_dilation, CudnnConvPlan::Op op, int want) {
  std::mt19937 gen(seed);
  Counts counts;
  for (int tried = 0; tried < 40000; ++tried) {
    if ((op == CudnnConvPlan::Op::forward ? counts.forward : counts.backward_data) == want) {
      break;
    }
    if (auto node = random_conv(gen, input_dilation)) {
      counts.add(check_node(*node));
      if (::testing::Test::HasFatalFailure()) {
        break;
      }
    }
  }
  return counts;
}

TEST(CudnnConvPlan, ForwardMatchesConvGeneral) {
  Counts counts = check_random(14, false, CudnnConvPlan::Op::forward, 1500);
  EXPECT_EQ(counts.forward, 1500);
  // Without input dilation only an input cropped away entirely falls back.
  for (auto& reason : counts.reasons) {
    EXPECT_EQ(reason, "the negative padding crops the whole input");
  }
  // Every branch of the mapping ran many times.
  EXPECT_GT(counts.temp_output, 200);
  EXPECT_GT(counts.crop, 200);
  EXPECT_GT(counts.shifted, 100);
}

TEST(CudnnConvPlan, InputDilationMatchesConvGeneral) {
  Counts counts = check_random(41, true, CudnnConvPlan::Op::backward_data, 800);
  EXPECT_EQ(counts.backward_data, 800);
  EXPECT_GT(counts.forward, 50);   // input dilation 1 everywhere
  EXPECT_GT(counts.fallback, 50);  // strides
  // Only a stride beside the input dilation (or an input cropped away) falls back.
  for (auto& reason : counts.reasons) {
    EXPECT_TRUE(reason == "input dilation with a stride above 1" ||
                reason == "the negative padding crops the whole input")
        << reason;
  }
  EXPECT_GT(counts.temp_output, 200);
  EXPECT_GT(counts.zero_fill, 100);
  EXPECT_GT(counts.untransposed, 20);  // depthwise and pointwise filters: no transpose copy
}

// The Convolution nodes that the derivatives of `node` (input and weight, through vjp) build
// on a CPU stream, whatever the default device (GPU streams take ConvWeightGrad, whose plan is
// the forward one, and so do CPU streams for one input channel per group): the input's by
// stride phases or as a transposed convolution, the weight's with the stride as kernel
// dilation. Captured before evaluation detaches them.
std::vector<ConvNode> derivative_convs(const ConvNode& node, uint32_t seed) {
  const ConvParams p = node.p;
  auto f = [p](const std::vector<array>& a) {
    return std::vector<array>{detail::convolution(a[0], a[1], p, default_stream(Device::cpu))};
  };
  array cot = random_array(node.out.shape(), float64, -1, 1, seed);
  auto grads = vjp(f, {node.in, node.wt}, {cot}).second;
  std::vector<ConvNode> convs;
  std::vector<array> stack(grads.begin(), grads.end());
  std::set<std::uintptr_t> seen;
  while (!stack.empty()) {
    array a = stack.back();
    stack.pop_back();
    if (!seen.insert(a.id()).second || !a.has_primitive()) {
      continue;
    }
    if (dynamic_cast<const Convolution*>(&a.primitive())) {
      convs.push_back(capture(a));
    }
    for (auto& i : a.inputs()) {
      stack.push_back(i);
    }
  }
  return convs;
}

// Random geometries (padding anywhere in [-2, dilated kernel + 2]): every derivative
// convolution that maps gives conv_general's result.
TEST(CudnnConvPlan, DerivativeConvolutionsMatch) {
  std::mt19937 gen(3);
  Counts counts;
  int graphs = 0;
  for (int it = 0; it < 400 && graphs < 150; ++it) {
    auto node = random_conv(gen, uniform(gen, 0, 3) == 0);
    if (!node) {
      continue;
    }
    ++graphs;
    for (auto& c : derivative_convs(*node, gen())) {
      counts.add(check_node(c));
      ASSERT_FALSE(HasFatalFailure());
    }
  }
  EXPECT_EQ(graphs, 150);
  EXPECT_GT(counts.forward, 120);
  EXPECT_GT(counts.backward_data, 10);
}

// The geometries layers use (symmetric padding up to the dilated kernel, conv_transpose with
// output_padding below the stride): the convolution and every convolution of its derivatives
// map to cuDNN, and match.
TEST(CudnnConvPlan, LayerGeometriesNeverFallBack) {
  std::mt19937 gen(11);
  Counts counts;
  int graphs = 0;
  for (int it = 0; it < 2000 && graphs < 300; ++it) {
    const int nd = uniform(gen, 1, 3), groups = uniform(gen, 1, 2);
    const bool transposed = uniform(gen, 0, 2) == 0;
    std::vector<int> stride, pad, dil, out_pad;
    Shape in{uniform(gen, 1, 2)}, wt{groups * uniform(gen, 1, 3)};
    for (int i = 0; i < nd; ++i) {
      const int k = uniform(gen, 1, nd == 3 ? 3 : 4);
      in.push_back(uniform(gen, 1, nd == 3 ? 6 : 10));
      wt.push_back(k);
      stride.push_back(uniform(gen, 1, 3));
      dil.push_back(transposed ? 1 : uniform(gen, 1, 2));
      pad.push_back(uniform(gen, 0, (k - 1) * dil.back()));
      out_pad.push_back(uniform(gen, 0, stride.back() - 1));
    }
    const int Cg = uniform(gen, 1, 3);
    in.push_back(groups * Cg);
    wt.push_back(Cg);
    array x = random_array(in, float64, -1, 1, gen());
    array w = random_array(wt, float64, -1, 1, gen());
    std::optional<array> y;
    try {
      if (!transposed) {
        y = convolution_node(
            x, w, ConvParams{stride, pad, pad, dil, std::vector<int>(nd, 1), groups, false});
      } else if (nd == 1) {
        y = conv_transpose1d(x, w, stride[0], pad[0], 1, out_pad[0], groups);
      } else if (nd == 2) {
        y = conv_transpose2d(x, w, {stride[0], stride[1]}, {pad[0], pad[1]}, {1, 1},
                             {out_pad[0], out_pad[1]}, groups);
      } else {
        y = conv_transpose3d(x, w, {stride[0], stride[1], stride[2]}, {pad[0], pad[1], pad[2]},
                             {1, 1, 1}, {out_pad[0], out_pad[1], out_pad[2]}, groups);
      }
    } catch (const std::invalid_argument&) {
      continue;
    }
    ++graphs;
    ConvNode node = capture(*y);
    std::vector<ConvNode> convs = derivative_convs(node, gen());
    convs.push_back(node);
    for (auto& c : convs) {
      auto plan = check_node(c);
      ASSERT_FALSE(HasFatalFailure());
      EXPECT_NE(plan.op, CudnnConvPlan::Op::fallback)
          << plan.reason << ": " << describe(c.p, c.in.shape(), c.wt.shape())
          << (transposed ? " (of a transposed convolution)" : "");
      counts.add(plan);
    }
  }
  EXPECT_EQ(graphs, 300);
  EXPECT_GT(counts.backward_data, 100);
}

TEST(CudnnConvPlan, FallbackReasons) {
  ConvParams p{{1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 1, false};
  Shape in{1, 5, 5, 2}, wt{3, 3, 3, 2}, out{1, 3, 3, 3};
  EXPECT_EQ(plan_cudnn_conv(p, in, wt, out, float32).op, CudnnConvPlan::Op::forward);
  EXPECT_EQ(plan_cudnn_conv(p, in, wt, out, float16).op, CudnnConvPlan::Op::forward);
  EXPECT_EQ(plan_cudnn_conv(p, in, wt, out, bfloat16).op, CudnnConvPlan::Op::forward);
  auto f64 = plan_cudnn_conv(p, in, wt, out, float64);
  EXPECT_EQ(f64.op, CudnnConvPlan::Op::fallback);
  EXPECT_EQ(f64.reason, "dtype float64");
  EXPECT_EQ(plan_cudnn_conv(p, in, wt, out, int32).op, CudnnConvPlan::Op::fallback);
  // A symmetric 3x3 convolution needs no temporaries.
  auto plain = plan_cudnn_conv(p, in, wt, out, float32);
  EXPECT_FALSE(plain.temp_output());
  EXPECT_FALSE(plain.crops_input());
  EXPECT_EQ(plain.x_dims, (std::vector<int>{1, 2, 5, 5}));
  EXPECT_EQ(plain.w_dims, (std::vector<int>{3, 2, 3, 3}));
  // Input dilation with a stride.
  ConvParams q = p;
  q.input_dilation = {2, 1};
  q.stride = {2, 1};
  auto strided = plan_cudnn_conv(q, in, wt, {1, 4, 3, 3}, float32);
  EXPECT_EQ(strided.op, CudnnConvPlan::Op::fallback);
  EXPECT_EQ(strided.reason, "input dilation with a stride above 1");
  // Sizes past 32-bit indices.
  auto big = plan_cudnn_conv(p, {1 << 16, 256, 256, 2}, wt, {1 << 16, 254, 254, 3}, float32);
  EXPECT_EQ(big.op, CudnnConvPlan::Op::fallback);
  EXPECT_EQ(big.reason, "sizes past 32-bit indices");
  // 1-D: a leading unit dimension.
  ConvParams one{{2}, {1}, {1}, {1}, {1}, 1, true};
  auto c1 = plan_cudnn_conv(one, {2, 9, 4}, {5, 3, 4}, {2, 5, 5}, float32);
  EXPECT_EQ(c1.x_dims, (std::vector<int>{2, 4, 1, 9}));
  EXPECT_EQ(c1.y_dims, (std::vector<int>{2, 5, 1, 5}));
  EXPECT_TRUE(c1.convolution_mode);
}

}  // namespace
}  // namespace mlx::core::test
