#pragma once

#include <complex>

namespace mlx::core {

struct complex64_t : public std::complex<float> {
  using std::complex<float>::complex;
  complex64_t() = default;
  complex64_t(const std::complex<float>& c) : std::complex<float>(c) {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  complex64_t(T v) : std::complex<float>(static_cast<float>(v), 0.0f) {}
  // Real conversions take the real part, as NumPy does for astype.
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  explicit operator T() const {
    return static_cast<T>(real());
  }
};

// Lexicographic order (real, then imaginary), used by max/min/sort on complex arrays.
inline bool operator<(const complex64_t& a, const complex64_t& b) {
  return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
}
inline bool operator>(const complex64_t& a, const complex64_t& b) { return b < a; }
inline bool operator<=(const complex64_t& a, const complex64_t& b) { return !(b < a); }
inline bool operator>=(const complex64_t& a, const complex64_t& b) { return !(a < b); }

}  // namespace mlx::core
