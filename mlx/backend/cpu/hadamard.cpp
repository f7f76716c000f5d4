// CPU Hadamard transform: per row, in float32 (float64 for float64), a fast Walsh-Hadamard
// transform of each 2^k block in place (n log n additions), then the product with H_m across
// the m blocks, then the scale; rows are spread over the pool.
#include "mlx/primitives/hadamard.h"

#include <algorithm>
#include <optional>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/hadamard_matrices.h"
#include "mlx/backend/cpu/dense.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core {

namespace {

using namespace cpu;

template <typename A>
void fwht(A* x, int64_t p) {
  for (int64_t h = 1; h < p; h *= 2) {
    for (int64_t i = 0; i < p; i += 2 * h) {
      A* lo = x + i;
      A* hi = x + i + h;
      for (int64_t j = 0; j < h; ++j) {
        A u = lo[j], v = hi[j];
        lo[j] = u + v;
        hi[j] = u - v;
      }
    }
  }
}

template <typename T>
void transform_rows(const T* in, T* out, int64_t rows, int64_t n, double scale, bool transpose) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const HadamardSize hs = hadamard_size(n);
  const int m = hs.m;
  const int64_t p = hs.p;
  const std::vector<int8_t>& h = hadamard_matrix(m);
  const int64_t grain =
      std::max<int64_t>(1, kParallelBytes / (n * static_cast<int64_t>(sizeof(A))));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<A> buf(n), mixed(m > 1 ? n : 0);
    for (int64_t r = r0; r < r1; ++r) {
      const T* src = in + r * n;
      for (int64_t i = 0; i < n; ++i) {
        buf[i] = static_cast<A>(src[i]);
      }
      for (int b = 0; b < m; ++b) {
        fwht(buf.data() + b * p, p);
      }
      const A* res = buf.data();
      if (m > 1) {
        std::fill(mixed.begin(), mixed.end(), A(0));
        for (int i = 0; i < m; ++i) {
          A* dst = mixed.data() + i * p;
          for (int k = 0; k < m; ++k) {
            const int8_t sign = transpose ? h[k * m + i] : h[i * m + k];
            const A* blk = buf.data() + k * p;
            if (sign > 0) {
              for (int64_t j = 0; j < p; ++j) {
                dst[j] += blk[j];
              }
            } else {
              for (int64_t j = 0; j < p; ++j) {
                dst[j] -= blk[j];
              }
            }
          }
        }
        res = mixed.data();
      }
      T* dst = out + r * n;
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = static_cast<T>(res[i] * static_cast<A>(scale));
      }
    }
  });
}

}  // namespace

void Hadamard::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  std::optional<array> held;
  const array& x = row_contiguous(inputs[0], inputs[0].dtype(), held);
  const int64_t n = x.shape(-1), rows = static_cast<int64_t>(x.size()) / n;
  dispatch_float(out.dtype(), "hadamard_transform", [&]<typename T>() {
    transform_rows<T>(x.data<T>(), out.data<T>(), rows, n, scale_, transpose_);
  });
}

}  // namespace mlx::core
