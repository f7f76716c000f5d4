// float16 and bfloat16 value types: storage is 16 bits, arithmetic happens in float.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace mlx::core {

namespace detail {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// IEEE binary16 <- binary32 with round-to-nearest-even; NaN stays NaN, overflow -> inf.
inline uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u);
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520 -> inf
    return sign | 0x7c00u;
  }
  if (abs < 0x38800000u) {  // result is subnormal or zero in half
    // Add 0.5 (as float) so the FPU does the rounding into the subnormal range.
    float shifted = bits_float(abs) + 0.5f;
    return sign | static_cast<uint16_t>(float_bits(shifted) - 0x3f000000u);
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return sign | static_cast<uint16_t>(abs >> 13);
}

inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) {
    return bits_float(sign | 0x7f800000u | (mant << 13));
  }
  if (exp == 0) {
    // Subnormal (or zero): value = mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_bfloat_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  }
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

inline float bfloat_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

}  // namespace detail

#define MLX_HALF_LIKE_TYPE(NAME, TO_BITS, FROM_BITS)                           \
  struct NAME {                                                                \
    uint16_t bits_;                                                            \
    NAME() = default;                                                          \
    static constexpr NAME from_bits(uint16_t b) {                              \
      NAME h{};                                                                \
      h.bits_ = b;                                                             \
      return h;                                                                \
    }                                                                          \
    NAME(float f) : bits_(detail::TO_BITS(f)) {}                               \
    NAME(double f) : bits_(detail::TO_BITS(static_cast<float>(f))) {}          \
    template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>  \
    NAME(T v) : bits_(detail::TO_BITS(static_cast<float>(v))) {}               \
    operator float() const { return detail::FROM_BITS(bits_); }                \
    NAME& operator+=(NAME o) { return *this = NAME(float(*this) + float(o)); } \
    NAME& operator-=(NAME o) { return *this = NAME(float(*this) - float(o)); } \
    NAME& operator*=(NAME o) { return *this = NAME(float(*this) * float(o)); } \
    NAME& operator/=(NAME o) { return *this = NAME(float(*this) / float(o)); } \
    NAME operator-() const { return from_bits(bits_ ^ 0x8000u); }              \
  };                                                                           \
  inline NAME operator+(NAME a, NAME b) { return NAME(float(a) + float(b)); }  \
  inline NAME operator-(NAME a, NAME b) { return NAME(float(a) - float(b)); }  \
  inline NAME operator*(NAME a, NAME b) { return NAME(float(a) * float(b)); }  \
  inline NAME operator/(NAME a, NAME b) { return NAME(float(a) / float(b)); }  \
  inline bool operator==(NAME a, NAME b) { return float(a) == float(b); }      \
  inline bool operator!=(NAME a, NAME b) { return float(a) != float(b); }      \
  inline bool operator<(NAME a, NAME b) { return float(a) < float(b); }        \
  inline bool operator>(NAME a, NAME b) { return float(a) > float(b); }        \
  inline bool operator<=(NAME a, NAME b) { return float(a) <= float(b); }      \
  inline bool operator>=(NAME a, NAME b) { return float(a) >= float(b); }

MLX_HALF_LIKE_TYPE(float16_t, float_to_half_bits, half_bits_to_float)
MLX_HALF_LIKE_TYPE(bfloat16_t, float_to_bfloat_bits, bfloat_bits_to_float)
#undef MLX_HALF_LIKE_TYPE

}  // namespace mlx::core

namespace std {
template <>
class numeric_limits<mlx::core::float16_t> {
  using T = mlx::core::float16_t;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 11;
  static constexpr T min() { return T::from_bits(0x0400); }
  static constexpr T max() { return T::from_bits(0x7bff); }
  static constexpr T lowest() { return T::from_bits(0xfbff); }
  static constexpr T epsilon() { return T::from_bits(0x1400); }
  static constexpr T infinity() { return T::from_bits(0x7c00); }
  static constexpr T quiet_NaN() { return T::from_bits(0x7e00); }
  static constexpr T denorm_min() { return T::from_bits(0x0001); }
};
template <>
class numeric_limits<mlx::core::bfloat16_t> {
  using T = mlx::core::bfloat16_t;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 8;
  static constexpr T min() { return T::from_bits(0x0080); }
  static constexpr T max() { return T::from_bits(0x7f7f); }
  static constexpr T lowest() { return T::from_bits(0xff7f); }
  static constexpr T epsilon() { return T::from_bits(0x3c00); }
  static constexpr T infinity() { return T::from_bits(0x7f80); }
  static constexpr T quiet_NaN() { return T::from_bits(0x7fc0); }
  static constexpr T denorm_min() { return T::from_bits(0x0001); }
};
}  // namespace std
