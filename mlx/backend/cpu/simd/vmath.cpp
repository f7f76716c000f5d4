#include "mlx/backend/cpu/simd/vmath.h"

#include <algorithm>
#include <cstdint>

#include "mlx/backend/cpu/simd/vec.h"

namespace mlx::core::simd {

namespace {

// From this many elements on, outputs are written with non-temporal stores: an
// output of 8 MB or more would mostly be evicted before use anyway, and skipping
// the read-for-ownership of each line saves a third of the memory traffic.
constexpr int64_t kStreamMinSize = int64_t{1} << 21;

// flatten: F must be inlined into each loop (GCC otherwise calls the larger
// functions, such as log, per vector and reloads every constant).
template <VecF (*F)(VecF)>
[[gnu::flatten]] void apply(const float* in, float* out, int64_t n) {
  int64_t i = 0;
  if (n >= kStreamMinSize) {
    // Peel up to kWidth - 1 elements so that the streaming stores are aligned.
    constexpr uintptr_t kAlign = kWidth * sizeof(float);
    int head = static_cast<int>((-reinterpret_cast<uintptr_t>(out) % kAlign) / sizeof(float));
    if (head > 0)
      store_partial(out, F(load_partial(in, head)), head);
    for (i = head; i + kWidth <= n; i += kWidth) {
      // Reads compete with the streaming writes; prefetching 2 KB ahead keeps them
      // flowing (clamped so the address stays within the array).
      __builtin_prefetch(in + std::min(i + 512, n));
      store_stream(out + i, F(load(in + i)));
    }
    stream_fence();
  }
  for (; i + kWidth <= n; i += kWidth)
    store(out + i, F(load(in + i)));
  if (i < n) {
    int tail = static_cast<int>(n - i);
    store_partial(out + i, F(load_partial(in + i, tail)), tail);
  }
}

}  // namespace

#define MLX_SIMD_UNARY_KERNEL(name) \
  void name(const float* in, float* out, int64_t n) { apply<name>(in, out, n); }

MLX_SIMD_UNARY_KERNEL(exp)
MLX_SIMD_UNARY_KERNEL(expm1)
MLX_SIMD_UNARY_KERNEL(log)
MLX_SIMD_UNARY_KERNEL(log1p)
MLX_SIMD_UNARY_KERNEL(log2)
MLX_SIMD_UNARY_KERNEL(log10)
MLX_SIMD_UNARY_KERNEL(sin)
MLX_SIMD_UNARY_KERNEL(cos)
MLX_SIMD_UNARY_KERNEL(tan)
MLX_SIMD_UNARY_KERNEL(tanh)
MLX_SIMD_UNARY_KERNEL(sigmoid)
MLX_SIMD_UNARY_KERNEL(erf)
MLX_SIMD_UNARY_KERNEL(erfinv)
MLX_SIMD_UNARY_KERNEL(gelu)
MLX_SIMD_UNARY_KERNEL(gelu_grad)
MLX_SIMD_UNARY_KERNEL(gelu_approx)
MLX_SIMD_UNARY_KERNEL(gelu_approx_grad)
MLX_SIMD_UNARY_KERNEL(silu)
MLX_SIMD_UNARY_KERNEL(silu_grad)
MLX_SIMD_UNARY_KERNEL(sinh)
MLX_SIMD_UNARY_KERNEL(cosh)
MLX_SIMD_UNARY_KERNEL(atan)
MLX_SIMD_UNARY_KERNEL(asin)
MLX_SIMD_UNARY_KERNEL(acos)
MLX_SIMD_UNARY_KERNEL(asinh)
MLX_SIMD_UNARY_KERNEL(acosh)
MLX_SIMD_UNARY_KERNEL(atanh)
MLX_SIMD_UNARY_KERNEL(sqrt)
MLX_SIMD_UNARY_KERNEL(rsqrt)

#undef MLX_SIMD_UNARY_KERNEL

}  // namespace mlx::core::simd
