// Fused RMS and layer norms: each row of the last axis is read as floats (in place when it is
// float32 at unit stride, else through a float buffer), its statistics come from those, and the
// normalized row is written straight out.
#include <cmath>
#include <vector>

#include "mlx/backend/cpu/fast_common.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cpu;
using namespace detail;

// Calls norm(row_in, row_out) for every row, row_in x's row as Acc values (in place when it
// is, else a float copy); rows split across threads.
template <typename T, typename Norm>
void for_each_norm_row(const array& x, array& out, Norm norm) {
  using Acc = AccType<T>;
  out.set_data(allocator::malloc(out.nbytes()));
  int64_t d = x.shape(-1);
  if (out.size() == 0) {
    return;
  }
  int64_t rows = static_cast<int64_t>(x.size()) / d;
  auto layout = detail::last_axis_rows(x);
  int64_t stride = layout.strides[0].back();
  const T* src = x.data<T>();
  T* dst = out.data<T>();
  int64_t grain = std::max<int64_t>(1, kParallelBytes / (d * sizeof(T)));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> row(d);
    int64_t r = r0;
    for_each_row(layout, r0, r1, [&](const std::array<int64_t, 1>& off) {
      norm(acc_row(src + off[0], stride, d, row.data()), dst + r * d);
      ++r;
    });
  });
}

}  // namespace

void RMSNorm::eval_cpu(const std::vector<array>& inputs, array& out) {
  dispatch_float(out.dtype(), "rms_norm", [&]<typename T>() {
    using Acc = AccType<T>;
    const array& x = inputs[0];
    int64_t d = x.shape(-1);
    auto w = feature_param<T, Acc>(has_weight_ ? &inputs[1] : nullptr, d, Acc(1));
    Acc eps = eps_;
    for_each_norm_row<T>(x, out, [&](const Acc* row, T* o) {
      Acc inv = rms_rstd(row, d, eps);
      for (int64_t i = 0; i < d; ++i) {
        o[i] = static_cast<T>(row[i] * inv * w[i]);
      }
    });
  });
}

void LayerNorm::eval_cpu(const std::vector<array>& inputs, array& out) {
  dispatch_float(out.dtype(), "layer_norm", [&]<typename T>() {
    using Acc = AccType<T>;
    const array& x = inputs[0];
    int64_t d = x.shape(-1);
    int next = 1;
    auto w = feature_param<T, Acc>(has_weight_ ? &inputs[next++] : nullptr, d, Acc(1));
    auto b = feature_param<T, Acc>(has_bias_ ? &inputs[next++] : nullptr, d, Acc(0));
    Acc eps = eps_;
    for_each_norm_row<T>(x, out, [&](const Acc* row, T* o) {
      auto [mean, inv] = mean_rstd(row, d, eps);
      for (int64_t i = 0; i < d; ++i) {
        o[i] = static_cast<T>((row[i] - mean) * inv * w[i] + b[i]);
      }
    });
  });
}

}  // namespace mlx::core::fast
