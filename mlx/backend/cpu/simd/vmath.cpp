#include "mlx/backend/cpu/simd/vmath.h"

#include "mlx/backend/cpu/cpu_features.h"
#include "mlx/backend/cpu/simd/vmath_kernels.h"

namespace mlx::core::simd {

#ifdef MLX_VMATH_AVX512
// The sixteen-lane kernels (vmath_avx512.cpp), for CPUs with AVX-512: the same results at
// twice the lanes per instruction where the library's own target is AVX2.
namespace wide {
#define MLX_DECLARE_UNARY(name) void name(const float* in, float* out, int64_t n);
#define MLX_DECLARE_BINARY(name) \
  void name(const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, int64_t n);
MLX_VMATH_UNARY_KERNELS(MLX_DECLARE_UNARY)
MLX_VMATH_BINARY_KERNELS(MLX_DECLARE_BINARY)
#undef MLX_DECLARE_UNARY
#undef MLX_DECLARE_BINARY
}  // namespace wide

#define MLX_WIDE_UNARY(name)       \
  if (cpu::has_avx512()) {         \
    return wide::name(in, out, n); \
  }
#define MLX_WIDE_BINARY(name)                            \
  if (cpu::has_avx512()) {                               \
    return wide::name(a, a_scalar, b, b_scalar, out, n); \
  }
#else
#define MLX_WIDE_UNARY(name)
#define MLX_WIDE_BINARY(name)
#endif

#define MLX_SIMD_UNARY_KERNEL(name)                   \
  void name(const float* in, float* out, int64_t n) { \
    MLX_WIDE_UNARY(name)                              \
    apply<name>(in, out, n);                          \
  }
#define MLX_SIMD_BINARY_KERNEL(name)                                                               \
  void name(const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, int64_t n) { \
    MLX_WIDE_BINARY(name)                                                                          \
    apply_binary<name>(a, a_scalar, b, b_scalar, out, n);                                          \
  }

MLX_VMATH_UNARY_KERNELS(MLX_SIMD_UNARY_KERNEL)
MLX_VMATH_BINARY_KERNELS(MLX_SIMD_BINARY_KERNEL)

#undef MLX_SIMD_UNARY_KERNEL
#undef MLX_SIMD_BINARY_KERNEL
#undef MLX_WIDE_UNARY
#undef MLX_WIDE_BINARY

}  // namespace mlx::core::simd
