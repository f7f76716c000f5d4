// Fused optimizer steps on the CPU (AdamUpdate, SgdUpdate): per parameter of the bucket, one
// pass over it, its gradient and state, writing the new parameter and state (in place where the
// inputs can be donated, as they are in a training step that replaces its state). 16-bit values
// compute in float32, float64 in double.
#include <array>
#include <cmath>
#include <optional>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/cpu/dense.h"
#include "mlx/backend/cpu/elementwise.h"
#include "mlx/backend/cpu/fast_common.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

// For each of the n parameters of a step whose inputs are kIn groups of n arrays (parameters,
// gradients, state) and outputs kOut groups: row-contiguous inputs, outputs that take over the
// buffer of input donors[j] where they can, then update(in, out, begin, end) over ranges of
// elements on the pool. An output may share its input's buffer: kernels read element i before
// writing it.
template <typename T, size_t kIn, size_t kOut, typename Update>
void for_each_parameter(const std::vector<array>& inputs, std::vector<array>& outputs, size_t n,
                        const std::array<int, kOut>& donors, Update&& update) {
  using namespace cpu;
  for (size_t k = 0; k < n; ++k) {
    std::optional<array> copies[kIn];
    const array* in[kIn];
    for (size_t i = 0; i < kIn; ++i) {
      const array& x = inputs[i * n + k];
      in[i] = &row_contiguous(x, x.dtype(), copies[i]);
    }
    const T* src[kIn];
    T* dst[kOut];
    for (size_t j = 0; j < kOut; ++j) {
      array& out = outputs[j * n + k];
      set_dense_output_like(*in[0], out, {in[donors[j]]});
      dst[j] = out.data<T>();
    }
    for (size_t i = 0; i < kIn; ++i) {
      src[i] = in[i]->template data<T>();
    }
    parallel_for(static_cast<int64_t>(in[0]->size()), kParallelBytes / ((kIn + kOut) * sizeof(T)),
                 [&](int64_t b, int64_t e) { update(src, dst, b, e); });
  }
}

}  // namespace

void AdamUpdate::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const size_t n = parameters(inputs);
  dispatch_float(inputs[0].dtype(), "adam_update", [&]<typename T>() {
    using A = detail::AccType<T>;
    const A lr = inputs[4 * n].data<A>()[0], c1 = inputs[4 * n + 1].data<A>()[0],
            c2 = inputs[4 * n + 2].data<A>()[0];
    const A b1 = A(beta1_), one_minus_b1 = A(1.0 - beta1_), b2 = A(beta2_),
            one_minus_b2 = A(1.0 - beta2_), eps = A(eps_);
    const A decay = A(1) - lr * A(weight_decay_), inv_c1 = A(1) / c1, inv_c2 = A(1) / c2;
    auto update = [&](const T* const* in, T* const* out, int64_t b, int64_t e) {
      const T *p = in[0], *g = in[1], *m = in[2], *v = in[3];
      T *p_out = out[0], *m_out = out[1], *v_out = out[2];
      // Vectorizes with -fno-math-errno for std::sqrt (see CMakeLists.txt); ivdep, since the
      // compiler's overlap check would send donated buffers to scalar code.
#pragma GCC ivdep
      for (int64_t i = b; i < e; ++i) {
        const A gi = cast_value<A>(g[i]);
        const A mi = b1 * cast_value<A>(m[i]) + one_minus_b1 * gi;
        const A vi = b2 * cast_value<A>(v[i]) + one_minus_b2 * gi * gi;
        const A step = (mi * inv_c1) / (std::sqrt(vi * inv_c2) + eps);
        p_out[i] = cast_value<T>(cast_value<A>(p[i]) * decay - lr * step);
        m_out[i] = cast_value<T>(mi);
        v_out[i] = cast_value<T>(vi);
      }
    };
    for_each_parameter<T, 4, 3>(inputs, outputs, n, {0, 2, 3},
                                update);  // p', m', v' replace p, m, v
  });
}

void SgdUpdate::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const size_t n = parameters(inputs);
  dispatch_float(inputs[0].dtype(), "sgd_update", [&]<typename T>() {
    using A = detail::AccType<T>;
    const A lr = inputs.back().data<A>()[0], wd = A(weight_decay_), mu = A(momentum_),
            one_minus_damp = A(1.0 - dampening_);
    const bool nesterov = nesterov_;
    // {p, g} -> {p'}, or with momentum {p, g, v} -> {p', v'} (p', v' replace p, v).
    auto run = [&]<size_t kIn, size_t kOut>(const std::array<int, kOut>& donors) {
      for_each_parameter<T, kIn, kOut>(
          inputs, outputs, n, donors, [&](const T* const* in, T* const* out, int64_t b, int64_t e) {
            const T *p = in[0], *g = in[1], *v = kIn == 3 ? in[2] : nullptr;
            T *p_out = out[0], *v_out = kOut == 2 ? out[1] : nullptr;
#pragma GCC ivdep
            for (int64_t i = b; i < e; ++i) {
              const A pi = cast_value<A>(p[i]);
              const A gi = cast_value<A>(g[i]) + wd * pi;
              A step = gi;
              if constexpr (kIn == 3) {
                const A vi = mu * cast_value<A>(v[i]) + one_minus_damp * gi;
                v_out[i] = cast_value<T>(vi);
                step = nesterov ? gi + mu * vi : vi;
              }
              p_out[i] = cast_value<T>(pi - lr * step);
            }
          });
    };
    if (has_momentum()) {
      run.template operator()<3, 2>({0, 2});
    } else {
      run.template operator()<2, 1>({0});
    }
  });
}

}  // namespace mlx::core::fast
