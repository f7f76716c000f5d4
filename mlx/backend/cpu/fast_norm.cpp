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

// Calls norm.template operator()<K>(rows_in, rows_out) for every group of K rows (kRowGroup,
// then 1), rows_in x's rows as Acc values (in place when they are, else float copies); rows
// split across threads.
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
    std::vector<Acc> buf(kRowGroup * d);
    for_each_row_group<kRowGroup>(
        layout, r0, r1, [&]<int K>(const std::array<std::array<int64_t, 1>, K>& off, int64_t r) {
          std::array<const Acc*, K> in;
          std::array<T*, K> o;
          for (int k = 0; k < K; ++k) {
            in[k] = acc_row(src + off[k][0], stride, d, buf.data() + k * d);
            o[k] = dst + (r + k) * d;
          }
          norm.template operator()<K>(in, o);
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
    for_each_norm_row<T>(
        x, out, [&]<int K>(const std::array<const Acc*, K>& rows, const std::array<T*, K>& outs) {
          auto inv = rms_rstd<K>(rows, d, eps);
          for (int k = 0; k < K; ++k) {
            for (int64_t i = 0; i < d; ++i) {
              outs[k][i] = static_cast<T>(rows[k][i] * inv[k] * w[i]);
            }
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
    for_each_norm_row<T>(
        x, out, [&]<int K>(const std::array<const Acc*, K>& rows, const std::array<T*, K>& outs) {
          auto stats = mean_rstd<K>(rows, d, eps);
          for (int k = 0; k < K; ++k) {
            auto [mean, inv] = stats[k];
            for (int64_t i = 0; i < d; ++i) {
              outs[k][i] = static_cast<T>((rows[k][i] - mean) * inv * w[i] + b[i]);
            }
          }
        });
  });
}

}  // namespace mlx::core::fast
