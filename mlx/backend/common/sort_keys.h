// Order-preserving maps of real dtypes to unsigned integers of the same width, shared by the
// sort kernels of every backend (compiled for the device in CUDA sources): keys compare as
// integers in the order NumPy sorts values, NaN (any sign) last. Radix sorts need nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mlx/types/host_device.h"

namespace mlx::core {

// The unsigned integer of N bytes.
template <size_t N>
using SortKeyUInt = std::conditional_t<
    N == 1, uint8_t,
    std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>>;

// `kInf` is the bit pattern of +infinity of the float type (zero for integers); `kSigned`
// says whether an integer type is signed.
template <typename U, U kInf, bool kSigned>
struct SortKeyBits {
  static constexpr U kSign = U(U(1) << (8 * sizeof(U) - 1));
  static constexpr bool kFloat = kInf != 0;

  // `merge_zeros` maps -0.0 to +0.0 so that they tie (argsort); sort keeps them apart so that
  // decode gives back the exact value.
  MLX_HOST_DEVICE static U encode(U u, bool merge_zeros) {
    if constexpr (kFloat) {
      U mag = u & U(~kSign);
      if (mag > kInf) {
        return U(~U(0));
      }
      if (merge_zeros && mag == 0) {
        u = 0;
      }
      return (u & kSign) ? U(~u) : U(u | kSign);
    } else if constexpr (kSigned) {
      return U(u ^ kSign);
    } else {
      return u;
    }
  }
  MLX_HOST_DEVICE static U decode(U k) {
    if constexpr (kFloat) {
      return (k & kSign) ? U(k ^ kSign) : U(~k);
    } else if constexpr (kSigned) {
      return U(k ^ kSign);
    } else {
      return k;
    }
  }
};

// The key bits of a dtype's C++ type T: a float type (the 16-bit ones named by kind, since
// their C++ types differ between backends) or an integer type.
enum class SortKeyKind { integer, float16, bfloat16, float32, float64 };

template <typename U, SortKeyKind kKind, bool kSigned>
using SortKeyOf = SortKeyBits<U,
                              kKind == SortKeyKind::float16    ? U(0x7c00)
                              : kKind == SortKeyKind::bfloat16 ? U(0x7f80)
                              : kKind == SortKeyKind::float32  ? U(0x7f800000u)
                              : kKind == SortKeyKind::float64  ? U(0x7ff0000000000000ull)
                                                               : U(0),
                              kSigned>;

}  // namespace mlx::core
