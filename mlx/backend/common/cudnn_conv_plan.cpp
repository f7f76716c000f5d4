#include "mlx/backend/common/cudnn_conv_plan.h"

#include <algorithm>
#include <climits>

#include "mlx/utils.h"

namespace mlx::core {

namespace {

CudnnConvPlan fallback(std::string reason) {
  CudnnConvPlan plan;
  plan.reason = std::move(reason);
  return plan;
}

int64_t elements(const std::vector<int>& dims) {
  int64_t n = 1;
  for (int d : dims) {
    n *= d;
  }
  return n;
}

}  // namespace

bool CudnnConvPlan::crops_input() const {
  return std::any_of(crop.begin(), crop.end(), [](int c) { return c > 0; });
}

bool CudnnConvPlan::temp_output() const {
  return std::any_of(keep.begin(), keep.end(), [](int k) { return k != 0; }) || y_dims != out_dims;
}

int CudnnConvPlan::window_begin(int c) const { return std::max(0, -keep[c]); }

int CudnnConvPlan::window_end(int c) const {
  return std::max(window_begin(c), std::min(out_dims[c + 2], y_dims[c + 2] - keep[c]));
}

bool CudnnConvPlan::zero_fill() const {
  for (size_t c = 0; c < keep.size(); ++c) {
    if (window_begin(c) > 0 || window_end(c) < out_dims[c + 2]) {
      return true;
    }
  }
  return false;
}

int64_t cudnn_conv_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation) {
  return 1 + (in + 2 * pad - ((k - 1) * dilation + 1)) / stride;
}

std::vector<int64_t> cudnn_nhwc_strides(const std::vector<int>& dims) {
  // Memory order N, spatial..., C.
  const int nd = static_cast<int>(dims.size());
  std::vector<int64_t> strides(nd);
  int64_t s = 1;
  strides[1] = s;
  s *= dims[1];
  for (int i = nd - 1; i >= 2; --i) {
    strides[i] = s;
    s *= dims[i];
  }
  strides[0] = s;
  return strides;
}

CudnnConvPlan plan_cudnn_conv(const ConvParams& p, const Shape& in, const Shape& wt,
                              const Shape& out, Dtype dtype) {
  const int nd = static_cast<int>(in.size()) - 2;
  if (nd < 1 || nd > 3) {
    return fallback(msg(nd, " spatial dimensions"));
  }
  if (dtype != float32 && dtype != float16 && dtype != bfloat16) {
    return fallback(msg("dtype ", dtype));
  }
  for (auto* shape : {&in, &wt, &out}) {
    for (int d : *shape) {
      if (d == 0) {
        return fallback("empty operand");
      }
    }
  }
  const bool dilated_input =
      std::any_of(p.input_dilation.begin(), p.input_dilation.end(), [](int d) { return d > 1; });
  const int N = in[0], C = in.back(), O = wt[0], Cg = wt.back(), Og = O / p.groups;
  // cuDNN's spatial dimensions: ours after `lead` unit ones.
  const int cnd = std::max(nd, 2), lead = cnd - nd;
  CudnnConvPlan plan;
  plan.groups = p.groups;
  plan.pad.assign(cnd, 0);
  plan.stride.assign(cnd, 1);
  plan.dilation.assign(cnd, 1);
  plan.crop.assign(cnd, 0);
  plan.keep.assign(cnd, 0);
  std::vector<int> xs(cnd, 1), ks(cnd, 1), ys(cnd, 1), outs(cnd, 1);
  for (int i = 0; i < nd; ++i) {
    const int c = lead + i;
    const int64_t n = in[i + 1], k = wt[i + 1], x = out[i + 1];
    const int64_t s = p.stride[i], d = p.kernel_dilation[i], lo = p.padding_lo[i];
    int64_t pad = 0, y = 0;
    if (!dilated_input) {
      // Output j reads input j s + t d - lo. Negative padding drops its elements from the
      // input; the symmetric pad lo + m s makes cuDNN's output j + m read what ours j does and
      // leaves at least the padding the last window reaches past the input's end.
      const int64_t a = std::max<int64_t>(0, -lo), base = std::max<int64_t>(0, lo);
      if (n - a < 1) {
        return fallback("the negative padding crops the whole input");
      }
      const int64_t reach = (x - 1) * s + (k - 1) * d + 1 - n - lo;  // padding read past the end
      const int64_t m = reach > base ? (reach - base + s - 1) / s : 0;
      pad = base + m * s;
      y = cudnn_conv_out_size(n - a, k, pad, s, d);
      plan.crop[c] = static_cast<int>(a);
      plan.keep[c] = static_cast<int>(m);
      plan.stride[c] = static_cast<int>(s);
      xs[c] = static_cast<int>(n - a);
    } else {
      // Output q sums input i times tap t where i D = q + t d - lo; backward data with pad P
      // and the taps reversed adds dy[i] w[t] into dx[q + keep], keep = (k - 1) d - lo - P.
      // Its dx has a size whose forward convolution gives back dy's: from
      // least = (n - 1) D + (k - 1) d + 1 - 2 P up to D - 1 more. Ours is zero where dx does
      // not reach, which holds when dx starts at or before our first output with a term
      // (q = -(k - 1) d + lo, so P <= (k - 1) d - lo) and ends past our last one with a term
      // (q = (n - 1) D + lo) or our end. P = (k - 1) d - lo (keep = 0) fits conv_transpose's
      // geometry; smaller ones (P = 0 always fits) leave a temporary output.
      if (s != 1) {
        return fallback("input dilation with a stride above 1");
      }
      const int64_t D = p.input_dilation[i], full = (k - 1) * d - lo, last = (n - 1) * D + lo;
      pad = -1;
      for (int64_t P = std::max<int64_t>(full, 0); P >= 0 && pad < 0; --P) {
        const int64_t keep = full - P, least = (n - 1) * D + (k - 1) * d + 1 - 2 * P;
        const int64_t size = std::clamp(x + keep, least, least + D - 1);
        if (size >= 1 && size - keep >= std::min(last + 1, x)) {
          pad = P;
          y = size;
          plan.keep[c] = static_cast<int>(keep);
        }
      }
      if (pad < 0) {
        return fallback("input dilation with no pad that covers the output");
      }
      plan.stride[c] = static_cast<int>(D);
      xs[c] = static_cast<int>(n);
    }
    if (pad > INT_MAX || y > INT_MAX) {
      return fallback("sizes past 32-bit indices");
    }
    plan.pad[c] = static_cast<int>(pad);
    plan.dilation[c] = static_cast<int>(d);
    ks[c] = static_cast<int>(k);
    ys[c] = static_cast<int>(y);
    outs[c] = static_cast<int>(x);
  }
  auto dims = [](int a, int b, const std::vector<int>& spatial) {
    std::vector<int> v{a, b};
    v.insert(v.end(), spatial.begin(), spatial.end());
    return v;
  };
  plan.x_dims = dims(N, C, xs);
  plan.y_dims = dims(N, O, ys);
  plan.out_dims = dims(N, O, outs);
  if (dilated_input) {
    plan.op = CudnnConvPlan::Op::backward_data;
    plan.convolution_mode = !p.flip;
    // (G, Og, taps, Cg) -> (G, Cg, taps, Og) moves nothing where at most one of Og, Cg and
    // the taps is above 1 (depthwise and pointwise filters): no copy then.
    const int64_t taps = elements(ks);
    plan.transpose_weight = (Og > 1) + (Cg > 1) + (taps > 1) > 1;
    plan.w_dims = dims(C, Og, ks);
  } else {
    plan.op = CudnnConvPlan::Op::forward;
    plan.convolution_mode = p.flip;
    plan.w_dims = dims(O, Cg, ks);
  }
  // cuDNN's legacy API takes int dimensions and strides.
  for (auto* v : {&plan.x_dims, &plan.w_dims, &plan.y_dims, &plan.out_dims}) {
    if (elements(*v) > INT_MAX) {
      return fallback("sizes past 32-bit indices");
    }
  }
  int64_t in_elements = 1;
  for (int d : in) {
    in_elements *= d;
  }
  if (in_elements > INT_MAX) {
    return fallback("sizes past 32-bit indices");
  }
  return plan;
}

}  // namespace mlx::core
