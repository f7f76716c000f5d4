// Backward passes of the fused norms. Each row of x and of the cotangent is read as floats (in
// place when float32 at unit stride, else through a float buffer), the row's statistics are
// recomputed from it, and dx's row is written straight out; the weight and bias gradients are
// summed per part of the rows and the parts added in a fixed order. Nothing of size (rows x D) is
// allocated besides dx.
#include <cmath>
#include <vector>

#include "mlx/backend/cpu/fast_common.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cpu;
using namespace detail;

// Calls grad(x_row, g_row, dx_row, sums) for every row: the rows of x and of the cotangent g as
// Acc values (in place when they are, else float copies), dx's row, and n_sums accumulators of
// D entries for the row's part. Returns the accumulators summed over the parts (n_sums x D).
template <typename T, typename RowGrad>
std::vector<AccType<T>> for_each_grad_row(const array& x, const array& g, array& dx, int n_sums,
                                          RowGrad grad) {
  using Acc = AccType<T>;
  int64_t d = x.shape(-1);
  // The cotangent's buffer can hold dx: each element of a row is read before it is written.
  if (g.is_donatable() && g.flags().row_contiguous && g.dtype() == dx.dtype()) {
    dx.copy_shared_buffer(g);
  } else {
    dx.set_data(allocator::malloc(dx.nbytes()));
  }
  std::vector<Acc> total(n_sums * d, Acc(0));
  if (dx.size() == 0) {
    return total;
  }
  int64_t rows = static_cast<int64_t>(x.size()) / d;
  auto layout = last_axis_rows<2>({&x, &g});
  int64_t sx = layout.strides[0].back(), sg = layout.strides[1].back();
  const T* xs = x.data<T>();
  const T* gs = g.data<T>();
  T* dst = dx.data<T>();
  // Parts by size, not by thread, so that the sums do not depend on scheduling.
  int64_t parts = std::clamp<int64_t>(rows * d * 2 * sizeof(T) / kParallelBytes, 1,
                                      std::min<int64_t>(rows, num_threads()));
  std::vector<Acc> partial(parts * n_sums * d, Acc(0));
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    std::vector<Acc> xrow(d), grow(d);
    for (int64_t p = p0; p < p1; ++p) {
      int64_t r = rows * p / parts, r1 = rows * (p + 1) / parts;
      Acc* sums = partial.data() + p * n_sums * d;
      for_each_row(layout, r, r1, [&](const std::array<int64_t, 2>& off) {
        grad(acc_row(xs + off[0], sx, d, xrow.data()), acc_row(gs + off[1], sg, d, grow.data()),
             dst + r * d, sums);
        ++r;
      });
    }
  });
  for (int64_t p = 0; p < parts; ++p) {
    for (int64_t i = 0; i < n_sums * d; ++i) {
      total[i] += partial[p * n_sums * d + i];
    }
  }
  return total;
}

// Writes n entries of an Acc vector into a new (n,) output.
template <typename T, typename Acc>
void write_param_grad(const Acc* sums, int64_t n, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  T* dst = out.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = static_cast<T>(sums[i]);
  }
}

}  // namespace

// y = x * r * w with r = 1 / sqrt(mean(x^2) + eps):
// dx = r * (g * w) - x * r^3 * mean(g * w * x), dw = sum over rows of g * x * r.
void RMSNormVJP::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_float(outputs[0].dtype(), "rms_norm_vjp", [&]<typename T>() {
    using Acc = AccType<T>;
    const array& x = inputs[0];
    int64_t d = x.shape(-1);
    auto w = feature_param<T, Acc>(has_weight_ ? &inputs[1] : nullptr, d, Acc(1));
    Acc eps = eps_;
    int n_sums = has_weight_ ? 1 : 0;
    auto sums = for_each_grad_row<T>(
        x, inputs.back(), outputs[0], n_sums, [&](const Acc* xr, const Acc* gr, T* dx, Acc* dw) {
          Acc r = rms_rstd(xr, d, eps);
          Acc c = lane_sum_at<Acc>(d, [&](int64_t i) { return gr[i] * w[i] * xr[i]; });
          Acc k = r * r * r * c / Acc(d);
          // dx may be g's buffer: only element i is read before element i is written.
#pragma GCC ivdep
          for (int64_t i = 0; i < d; ++i) {
            Acc gi = gr[i];
            if (has_weight_) {
              dw[i] += gi * xr[i] * r;
            }
            dx[i] = static_cast<T>(r * gi * w[i] - xr[i] * k);
          }
        });
    if (has_weight_) {
      write_param_grad<T>(sums.data(), d, outputs[1]);
    }
  });
}

// y = xhat * w + b with xhat = (x - mean) * r: with gw = g * w,
// dx = r * (gw - mean(gw) - xhat * mean(gw * xhat)), dw = sum of g * xhat, db = sum of g.
void LayerNormVJP::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_float(outputs[0].dtype(), "layer_norm_vjp", [&]<typename T>() {
    using Acc = AccType<T>;
    const array& x = inputs[0];
    int64_t d = x.shape(-1);
    auto w = feature_param<T, Acc>(has_weight_ ? &inputs[1] : nullptr, d, Acc(1));
    Acc eps = eps_;
    int n_sums = has_weight_ + has_bias_;
    auto sums = for_each_grad_row<T>(
        x, inputs.back(), outputs[0], n_sums, [&](const Acc* xr, const Acc* gr, T* dx, Acc* acc) {
          auto [mean, r] = mean_rstd(xr, d, eps);
          Acc s1 = lane_sum_at<Acc>(d, [&](int64_t i) { return gr[i] * w[i]; });
          Acc s2 =
              lane_sum_at<Acc>(d, [&](int64_t i) { return gr[i] * w[i] * (xr[i] - mean) * r; });
          Acc c1 = s1 / Acc(d), c2 = s2 / Acc(d);
          Acc* db = acc + (has_weight_ ? d : 0);
          // dx may be g's buffer: only element i is read before element i is written.
#pragma GCC ivdep
          for (int64_t i = 0; i < d; ++i) {
            Acc gi = gr[i];
            if (has_weight_) {
              acc[i] += gi * (xr[i] - mean) * r;
            }
            if (has_bias_) {
              db[i] += gi;
            }
            Acc xhat = (xr[i] - mean) * r;
            dx[i] = static_cast<T>(r * (gi * w[i] - c1 - xhat * c2));
          }
        });
    if (has_weight_) {
      write_param_grad<T>(sums.data(), d, outputs[1]);
    }
    if (has_bias_) {
      write_param_grad<T>(sums.data() + has_weight_ * d, d, outputs.back());
    }
  });
}

}  // namespace mlx::core::fast
