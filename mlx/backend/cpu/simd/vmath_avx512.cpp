// vmath.h's kernels at sixteen lanes: this file alone is compiled for AVX-512 (CMakeLists.txt),
// and vmath.cpp calls it where the CPU has AVX-512.
#define MLX_SIMD_WIDE 1
#include "mlx/backend/cpu/simd/vmath_kernels.h"

namespace mlx::core::simd::wide {

#define MLX_SIMD_UNARY_KERNEL(name) \
  void name(const float* in, float* out, int64_t n) { apply<simd::name>(in, out, n); }
#define MLX_SIMD_BINARY_KERNEL(name)                                                               \
  void name(const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, int64_t n) { \
    apply_binary<simd::name>(a, a_scalar, b, b_scalar, out, n);                                    \
  }

MLX_VMATH_UNARY_KERNELS(MLX_SIMD_UNARY_KERNEL)
MLX_VMATH_BINARY_KERNELS(MLX_SIMD_BINARY_KERNEL)

#undef MLX_SIMD_UNARY_KERNEL
#undef MLX_SIMD_BINARY_KERNEL

}  // namespace mlx::core::simd::wide
