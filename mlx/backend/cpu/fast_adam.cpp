// AdamUpdate on the CPU: per parameter of the bucket, one pass over it, its gradient and
// moments, writing the new parameter and moments (in place where the inputs can be donated, as they
// are in a training step that replaces its state). 16-bit values compute in float32, float64 in
// double.
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

void AdamUpdate::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  using namespace cpu;
  const size_t n = parameters(inputs);
  dispatch_float(inputs[0].dtype(), "adam_update", [&]<typename T>() {
    using A = detail::AccType<T>;
    const A lr = inputs[4 * n].data<A>()[0], c1 = inputs[4 * n + 1].data<A>()[0],
            c2 = inputs[4 * n + 2].data<A>()[0];
    const A b1 = A(beta1_), one_minus_b1 = A(1.0 - beta1_), b2 = A(beta2_),
            one_minus_b2 = A(1.0 - beta2_), eps = A(eps_);
    const A decay = A(1) - lr * A(weight_decay_), inv_c1 = A(1) / c1, inv_c2 = A(1) / c2;
    for (size_t k = 0; k < n; ++k) {
      std::optional<array> copies[4];
      const array* in[4];
      for (size_t i = 0; i < 4; ++i) {
        const array& x = inputs[i * n + k];
        in[i] = &row_contiguous(x, x.dtype(), copies[i]);
      }
      // Each output may take over the buffer of the input it replaces.
      array* out[3] = {&outputs[k], &outputs[n + k], &outputs[2 * n + k]};
      for (int i = 0; i < 3; ++i) {
        int donor = i == 0 ? 0 : i + 1;
        set_dense_output_like(*in[0], *out[i], {in[donor]});
      }
      const T* p = in[0]->data<T>();
      const T* g = in[1]->data<T>();
      const T* m = in[2]->data<T>();
      const T* v = in[3]->data<T>();
      T* p_out = out[0]->data<T>();
      T* m_out = out[1]->data<T>();
      T* v_out = out[2]->data<T>();
      const int64_t size = static_cast<int64_t>(in[0]->size());
      parallel_for(size, kParallelBytes / (4 * sizeof(T)), [&](int64_t b, int64_t e) {
      // An output may share its input's buffer: element i is read before it is written, so
      // the loop vectorizes (with -fno-math-errno for std::sqrt, see CMakeLists.txt); the
      // compiler's overlap check would otherwise send donated buffers to scalar code.
#pragma GCC ivdep
        for (int64_t i = b; i < e; ++i) {
          const A gi = cast_value<A>(g[i]);
          const A mi = b1 * cast_value<A>(m[i]) + one_minus_b1 * gi;
          const A vi = b2 * cast_value<A>(v[i]) + one_minus_b2 * gi * gi;
          const A update = (mi * inv_c1) / (std::sqrt(vi * inv_c2) + eps);
          p_out[i] = cast_value<T>(cast_value<A>(p[i]) * decay - lr * update);
          m_out[i] = cast_value<T>(mi);
          v_out[i] = cast_value<T>(vi);
        }
      });
    }
  });
}

}  // namespace mlx::core::fast
