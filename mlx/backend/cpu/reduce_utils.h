// Helpers shared by the reduction, scan and softmax kernels: bulk float16/bfloat16 <-> float
// conversion (so that half inputs run through the float kernels) and an incremental walker
// over strided index spaces.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

#include "mlx/array.h"

namespace mlx::core::cpu {

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

// The type a kernel computes in for elements of type T: float for the 16-bit floats.
template <typename T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

inline void to_float(const float16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) {
    dst[i] = static_cast<float>(src[i]);
  }
}

inline void to_float(const bfloat16_t* src, float* dst, int64_t n) {
  // A bfloat16 is the top half of a float: a shift GCC vectorizes.
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = std::bit_cast<float>(static_cast<uint32_t>(src[i].bits_) << 16);
  }
}

inline void from_float(const float* src, float16_t* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) {
    dst[i] = float16_t(src[i]);
  }
}

inline void from_float(const float* src, bfloat16_t* dst, int64_t n) {
  // Round to nearest even; NaNs stay (quiet) NaNs. Branch-free so that it vectorizes.
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x = std::bit_cast<uint32_t>(src[i]);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x40u;
    dst[i].bits_ = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
  }
}

// Visits the positions of `shape` in row-major order, keeping the element offset of the
// current position in N operands (strides[k]). Starting anywhere costs one division per
// dimension; each step is amortized O(1).
template <size_t N>
class Walker {
 public:
  Walker(const Shape& shape, const std::array<Strides, N>& strides, int64_t start = 0)
      : shape_(shape), strides_(strides), idx_(shape.size(), 0) {
    off_.fill(0);
    for (int d = static_cast<int>(shape_.size()) - 1; d >= 0; --d) {
      idx_[d] = static_cast<int32_t>(start % shape_[d]);
      start /= shape_[d];
      for (size_t k = 0; k < N; ++k) {
        off_[k] += idx_[d] * strides_[k][d];
      }
    }
  }
  int64_t offset(size_t k = 0) const { return off_[k]; }
  void next() {
    for (int d = static_cast<int>(shape_.size()) - 1; d >= 0; --d) {
      if (++idx_[d] < shape_[d]) {
        for (size_t k = 0; k < N; ++k) {
          off_[k] += strides_[k][d];
        }
        return;
      }
      for (size_t k = 0; k < N; ++k) {
        off_[k] -= (shape_[d] - 1) * strides_[k][d];
      }
      idx_[d] = 0;
    }
  }

 private:
  Shape shape_;
  std::array<Strides, N> strides_;
  std::vector<int32_t> idx_;
  std::array<int64_t, N> off_;
};

}  // namespace mlx::core::cpu
