// Fused rotary positional encoding. The angles depend only on (batch offset, position), so
// their cosines and sines are tabulated once and shared by every head; rows are then rotated
// in one pass, read through any layout.
#include <cmath>
#include <vector>

#include "mlx/backend/cpu/fast_common.h"
#include "mlx/backend/cpu/simd/vmath.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cpu;
using detail::AccType;

// cos and sin of (offset + t) * scale * inv_freq[i] for each offset and t < T, laid out as
// [offset][t][i] (half entries per position).
template <typename Acc>
void angle_tables(const std::vector<int64_t>& offsets, int64_t T,
                  const std::vector<double>& inv_freq, float scale, std::vector<Acc>& cos_t,
                  std::vector<Acc>& sin_t) {
  int64_t half = static_cast<int64_t>(inv_freq.size());
  int64_t n = static_cast<int64_t>(offsets.size()) * T;
  cos_t.resize(n * half);
  sin_t.resize(n * half);
  int64_t grain = std::max<int64_t>(1, 4096 / half);
  parallel_for(n, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      double pos = static_cast<double>(offsets[p / T] + p % T) * scale;
      Acc* c = cos_t.data() + p * half;
      Acc* s = sin_t.data() + p * half;
      for (int64_t i = 0; i < half; ++i) {
        c[i] = static_cast<Acc>(pos * inv_freq[i]);
      }
      if constexpr (std::is_same_v<Acc, float>) {
        simd::sin(c, s, half);
        simd::cos(c, c, half);
      } else {
        for (int64_t i = 0; i < half; ++i) {
          s[i] = std::sin(c[i]);
          c[i] = std::cos(c[i]);
        }
      }
    }
  });
}

// Rotates one row: pairs (i, i + half), or (2i, 2i + 1) when traditional; features past
// 2 * half are copied. kUnit: the input's element stride is 1 (else `stride`).
template <bool kTraditional, bool kUnit, typename T, typename Acc>
void rotate_row(const T* __restrict x, int64_t stride, T* __restrict out, int64_t d, int64_t half,
                const Acc* __restrict c, const Acc* __restrict s) {
  const int64_t st = kUnit ? 1 : stride;
  constexpr int64_t i1 = kTraditional ? 2 : 1;  // step between consecutive first elements
  const int64_t gap = kTraditional ? 1 : half;  // distance from a first element to its partner
  for (int64_t i = 0; i < half; ++i) {
    Acc x1 = static_cast<Acc>(x[i * i1 * st]);
    Acc x2 = static_cast<Acc>(x[(i * i1 + gap) * st]);
    out[i * i1] = static_cast<T>(x1 * c[i] - x2 * s[i]);
    out[i * i1 + gap] = static_cast<T>(x1 * s[i] + x2 * c[i]);
  }
  for (int64_t j = 2 * half; j < d; ++j) {
    out[j] = x[j * st];
  }
}

}  // namespace

void RoPE::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& x = inputs[0];
  const array& offset = inputs[1];
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int64_t half = dims_ / 2;
  std::vector<double> inv_freq(half);
  for (int64_t i = 0; i < half; ++i) {
    if (has_freqs_) {
      const array& f = inputs[2];
      inv_freq[i] = 1.0 / f.data<float>()[i * f.strides()[0]];
    } else {
      inv_freq[i] = std::pow(static_cast<double>(base_), -2.0 * i / dims_);
    }
  }
  std::vector<int64_t> offsets(offset.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    offsets[i] = offset.data<int32_t>()[offset.ndim() ? i * offset.strides()[0] : 0];
  }
  int64_t d = x.shape(-1), T = x.shape(-2);
  int64_t rows = static_cast<int64_t>(x.size()) / d;
  int64_t rows_per_batch = rows / x.shape(0);
  // Every row, not merged, so that a row's index gives its batch and position.
  Layout<1> layout{x.shape(), {x.strides()}};
  int64_t stride = x.strides().back();
  dispatch_float(x.dtype(), "rope", [&]<typename T_>() {
    using Acc = AccType<T_>;
    std::vector<Acc> cos_t, sin_t;
    angle_tables<Acc>(offsets, T, inv_freq, scale_, cos_t, sin_t);
    if (inverse_) {
      for (Acc& v : sin_t) {
        v = -v;
      }
    }
    const T_* src = x.data<T_>();
    T_* dst = out.data<T_>();
    bool per_batch = offsets.size() > 1;
    int64_t grain = std::max<int64_t>(1, kParallelBytes / (d * sizeof(T_)));
    // The row's table entry follows the rows (no division per row: rows are short).
    auto run = [&]<bool kTraditional, bool kUnit>() {
      parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
        int64_t r = r0, t = r0 % T, in_batch = r0 % rows_per_batch;
        int64_t batch_pos = per_batch ? (r0 / rows_per_batch) * T : 0;
        for_each_row(layout, r0, r1, [&](const std::array<int64_t, 1>& off) {
          const Acc* c = cos_t.data() + (batch_pos + t) * half;
          const Acc* s = sin_t.data() + (batch_pos + t) * half;
          rotate_row<kTraditional, kUnit>(src + off[0], stride, dst + r * d, d, half, c, s);
          ++r;
          if (++t == T) {
            t = 0;
          }
          if (++in_batch == rows_per_batch) {
            in_batch = 0;
            batch_pos += per_batch ? T : 0;
          }
        });
      });
    };
    if (traditional_) {
      stride == 1 ? run.template operator()<true, true>() : run.template operator()<true, false>();
    } else {
      stride == 1 ? run.template operator()<false, true>()
                  : run.template operator()<false, false>();
    }
  });
}

}  // namespace mlx::core::fast
