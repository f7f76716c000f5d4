// Element types on the device and dtype dispatch for CUDA kernels: the host's float16_t,
// bfloat16_t and complex64_t have the same bits as __half, __nv_bfloat16 and a float pair.
// NVRTC compiles it too (fused regions, compiled.cu): device code uses cuda::std, and the host's
// headers are left out there.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cuda/std/complex>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#ifndef __CUDACC_RTC__
#include <stdexcept>
#include <string>

#include "mlx/backend/common/dispatch.h"
#include "mlx/dtype.h"
#endif

namespace mlx::core::cu {

using complex_t = cuda::std::complex<float>;

template <typename T>
inline constexpr bool is_half_v =
    cuda::std::is_same_v<T, __half> || cuda::std::is_same_v<T, __nv_bfloat16>;
template <typename T>
inline constexpr bool is_complex_v = cuda::std::is_same_v<T, complex_t>;
template <typename T>
inline constexpr bool is_float_v = cuda::std::is_floating_point_v<T> || is_half_v<T>;

// The type arithmetic on T happens in: float for the 16-bit floats.
template <typename T>
using compute_t = cuda::std::conditional_t<is_half_v<T>, float, T>;

// The type a fused kernel accumulates a floating T in: double for double, float otherwise.
template <typename T>
using acc_t = cuda::std::conditional_t<cuda::std::is_same_v<T, double>, double, float>;

// NumPy conversions between any two device element types.
template <typename To, typename From>
__device__ __forceinline__ To cast_to(From x) {
  if constexpr (cuda::std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_complex_v<From>) {
    return cast_to<To>(x.real());
  } else if constexpr (is_complex_v<To>) {
    return To(cast_to<float>(x), 0.0f);
  } else if constexpr (cuda::std::is_same_v<To, bool>) {
    return static_cast<float>(x) != 0.0f;
  } else if constexpr (cuda::std::is_unsigned_v<To> && cuda::std::is_floating_point_v<From>) {
    // Through int64 below 2^63, as the host's conversion does: negative values wrap instead of
    // saturating at 0.
    if constexpr (sizeof(To) == 8) {
      if (x >= From(9223372036854775808.0)) {
        return static_cast<To>(x);
      }
    }
    return static_cast<To>(static_cast<int64_t>(x));
  } else if constexpr (is_half_v<From>) {
    return cast_to<To>(static_cast<float>(x));
  } else if constexpr (cuda::std::is_same_v<To, __half>) {
    if constexpr (cuda::std::is_same_v<From, double>) {
      return __double2half(x);
    } else {
      return __float2half(static_cast<float>(x));
    }
  } else if constexpr (cuda::std::is_same_v<To, __nv_bfloat16>) {
    if constexpr (cuda::std::is_same_v<From, double>) {
      return __double2bfloat16(x);
    } else {
      return __float2bfloat16(static_cast<float>(x));
    }
  } else {
    return static_cast<To>(x);
  }
}

// The element types kernels see, for backend/common/dispatch.h: dispatch_all<DeviceTypes>(...).
struct DeviceTypes {
  using float16 = __half;
  using bfloat16 = __nv_bfloat16;
  using complex64 = complex_t;
};

}  // namespace mlx::core::cu
