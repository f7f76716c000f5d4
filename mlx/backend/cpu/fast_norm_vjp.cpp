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

// Calls grad.template operator()<K>(x_rows, g_rows, dx_rows, sums) for every group of K rows
// (kRowGroup, then 1): the rows of x and of the cotangent g as Acc values (in place when they
// are, else float copies), dx's rows, and n_sums accumulators of D entries for the rows' part
// (added to row after row, in order). Returns the accumulators summed over the parts
// (n_sums x D).
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
    std::vector<Acc> xbuf(kRowGroup * d), gbuf(kRowGroup * d);
    for (int64_t p = p0; p < p1; ++p) {
      Acc* sums = partial.data() + p * n_sums * d;
      for_each_row_group<kRowGroup>(
          layout, rows * p / parts, rows * (p + 1) / parts,
          [&]<int K>(const std::array<std::array<int64_t, 2>, K>& off, int64_t r) {
            std::array<const Acc*, K> xr, gr;
            std::array<T*, K> dxr;
            for (int k = 0; k < K; ++k) {
              xr[k] = acc_row(xs + off[k][0], sx, d, xbuf.data() + k * d);
              gr[k] = acc_row(gs + off[k][1], sg, d, gbuf.data() + k * d);
              dxr[k] = dst + (r + k) * d;
            }
            grad.template operator()<K>(xr, gr, dxr, sums);
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
        x, inputs.back(), outputs[0], n_sums,
        [&]<int K>(const std::array<const Acc*, K>& xr, const std::array<const Acc*, K>& gr,
                   const std::array<T*, K>& dx, Acc* dw) {
          auto rstd = rms_rstd<K>(xr, d, eps);
          std::array<int64_t, K> n;
          n.fill(d);
          auto c =
              lane_sums_at<K, Acc>(n, [&](int j, int64_t i) { return gr[j][i] * w[i] * xr[j][i]; });
          for (int j = 0; j < K; ++j) {
            const Acc r = rstd[j], k = r * r * r * c[j] / Acc(d);
            const Acc *xj = xr[j], *gj = gr[j];
            T* dxj = dx[j];
        // dx may be g's buffer: only element i is read before element i is written.
#pragma GCC ivdep
            for (int64_t i = 0; i < d; ++i) {
              Acc gi = gj[i];
              if (has_weight_) {
                dw[i] += gi * xj[i] * r;
              }
              dxj[i] = static_cast<T>(r * gi * w[i] - xj[i] * k);
            }
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
        x, inputs.back(), outputs[0], n_sums,
        [&]<int K>(const std::array<const Acc*, K>& xr, const std::array<const Acc*, K>& gr,
                   const std::array<T*, K>& dx, Acc* acc) {
          auto stats = mean_rstd<K>(xr, d, eps);
          std::array<int64_t, K> n;
          n.fill(d);
          auto s1 = lane_sums_at<K, Acc>(n, [&](int j, int64_t i) { return gr[j][i] * w[i]; });
          auto s2 = lane_sums_at<K, Acc>(n, [&](int j, int64_t i) {
            return gr[j][i] * w[i] * (xr[j][i] - stats[j].first) * stats[j].second;
          });
          Acc* db = acc + (has_weight_ ? d : 0);
          for (int j = 0; j < K; ++j) {
            const auto [mean, r] = stats[j];
            const Acc c1 = s1[j] / Acc(d), c2 = s2[j] / Acc(d);
            const Acc *xj = xr[j], *gj = gr[j];
            T* dxj = dx[j];
        // dx may be g's buffer: only element i is read before element i is written.
#pragma GCC ivdep
            for (int64_t i = 0; i < d; ++i) {
              Acc gi = gj[i];
              if (has_weight_) {
                acc[i] += gi * (xj[i] - mean) * r;
              }
              if (has_bias_) {
                db[i] += gi;
              }
              Acc xhat = (xj[i] - mean) * r;
              dxj[i] = static_cast<T>(r * (gi * w[i] - c1 - xhat * c2));
            }
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
