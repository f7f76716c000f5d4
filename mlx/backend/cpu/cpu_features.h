// What the CPU running the library can do, asked once: the kernels compiled for more than the
// library's own target (x86-64-v3) are called only where it says so.
#pragma once

namespace mlx::core::cpu {

// AVX-512 F, DQ, BW and VL: the extensions the AVX-512 kernels are compiled with
// (gemm_avx512.h's target attribute, simd/vmath_avx512.cpp's flags).
inline bool has_avx512() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return ok;
}

}  // namespace mlx::core::cpu
