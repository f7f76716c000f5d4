// The bulk kernels' loops (vmath.h), for the vectors of the file that includes this one: the
// library's eight-lane build (vmath.cpp) and the sixteen-lane AVX-512 one (vmath_avx512.cpp).
// Everything here has internal linkage, so each file keeps its own.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mlx/backend/cpu/simd/vec.h"

// The kernels vmath.h declares, by name.
// clang-format off
#define MLX_VMATH_UNARY_KERNELS(X) \
  X(exp) X(expm1) X(log) X(log1p) X(log2) X(log10) X(sin) X(cos) X(tan) X(tanh) X(sigmoid) \
  X(erf) X(erfinv) X(gelu) X(gelu_approx) X(silu) X(sinh) X(cosh) X(atan) X(asin) X(acos) \
  X(asinh) X(acosh) X(atanh) X(sqrt) X(rsqrt)
#define MLX_VMATH_BINARY_KERNELS(X) X(gelu_vjp) X(gelu_approx_vjp) X(silu_vjp)
// clang-format on

namespace mlx::core::simd {

namespace {

// From this many elements on, outputs are written with non-temporal stores: an
// output of 8 MB or more would mostly be evicted before use anyway, and skipping
// the read-for-ownership of each line saves a third of the memory traffic.
constexpr int64_t kStreamMinSize = int64_t{1} << 21;

// A kernel's operand: `m` lanes from element i (m < kWidth only at the ends).
struct Dense {
  const float* p;
  VecF at(int64_t i, int m) const { return m == kWidth ? load(p + i) : load_partial(p + i, m); }
  // Reads compete with the streaming writes; prefetching 2 KB ahead keeps them flowing
  // (clamped so the address stays within the array).
  void prefetch(int64_t i, int64_t n) const { __builtin_prefetch(p + std::min(i + 512, n)); }
};
// One value repeated.
struct Scalar {
  VecF v;
  VecF at(int64_t, int) const { return v; }
  void prefetch(int64_t, int64_t) const {}
};

// out[i] = f(operands at i...) for 0 <= i < n. Callers are [[gnu::flatten]]: f must be inlined
// into each loop (GCC otherwise calls the larger functions, such as log, per vector and reloads
// every constant).
template <class F, class... Operands>
inline void apply_lanes(F f, float* out, int64_t n, Operands... ops) {
  int64_t i = 0;
  if (n >= kStreamMinSize) {
    // Peel up to kWidth - 1 elements so that the streaming stores are aligned.
    constexpr uintptr_t kAlign = kWidth * sizeof(float);
    int head = static_cast<int>((-reinterpret_cast<uintptr_t>(out) % kAlign) / sizeof(float));
    if (head > 0)
      store_partial(out, f(ops.at(0, head)...), head);
    for (i = head; i + kWidth <= n; i += kWidth) {
      (ops.prefetch(i, n), ...);
      store_stream(out + i, f(ops.at(i, kWidth)...));
    }
    stream_fence();
  }
  for (; i + kWidth <= n; i += kWidth)
    store(out + i, f(ops.at(i, kWidth)...));
  if (i < n) {
    int tail = static_cast<int>(n - i);
    store_partial(out + i, f(ops.at(i, tail)...), tail);
  }
}

template <VecF (*F)(VecF)>
[[gnu::flatten]] void apply(const float* in, float* out, int64_t n) {
  apply_lanes([](VecF x) { return F(x); }, out, n, Dense{in});
}

template <VecF (*F)(VecF, VecF)>
[[gnu::flatten]] void apply_binary(const float* a, bool a_scalar, const float* b, bool b_scalar,
                                   float* out, int64_t n) {
  auto f = [](VecF x, VecF y) { return F(x, y); };
  if (a_scalar && b_scalar) {
    apply_lanes(f, out, n, Scalar{broadcast(a[0])}, Scalar{broadcast(b[0])});
  } else if (a_scalar) {
    apply_lanes(f, out, n, Scalar{broadcast(a[0])}, Dense{b});
  } else if (b_scalar) {
    apply_lanes(f, out, n, Dense{a}, Scalar{broadcast(b[0])});
  } else {
    apply_lanes(f, out, n, Dense{a}, Dense{b});
  }
}

}  // namespace

}  // namespace mlx::core::simd
