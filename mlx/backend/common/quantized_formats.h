// Element and scale encodings of the microscaled quantization modes (OCP MX and NVIDIA's
// NVFP4), shared by the ops that quantize / dequantize and by the kernels:
// - E2M1 (fp4) codes: sign bit 3, values 0, 0.5, 1, 1.5, 2, 3, 4, 6;
// - E4M3 (fp8) codes: sign bit 7, bias 7, subnormals, S.1111.111 is NaN, largest 448;
// - E8M0 scales (mx modes): 2^(s - 127), 255 is NaN;
// - nvfp4 scales are E4M3; with a global scale g, a block's scale decodes to e4m3 * g / 2688.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace mlx::core {

inline constexpr float kNvfp4GlobalDivisor = 448.0f * 6.0f;

inline const std::array<float, 16>& fp4_values() {
  static const std::array<float, 16> table = [] {
    constexpr float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    std::array<float, 16> t{};
    for (int c = 0; c < 16; ++c) {
      t[c] = (c & 8) ? -mag[c & 7] : mag[c & 7];
    }
    return t;
  }();
  return table;
}

inline const std::array<float, 256>& fp8_e4m3_values() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) {
      int e = (c >> 3) & 0xF, m = c & 7;
      float v = e == 0 ? std::ldexp(m / 8.0f, -6) : std::ldexp(1.0f + m / 8.0f, e - 7);
      if ((c & 0x7F) == 0x7F) {
        v = std::numeric_limits<float>::quiet_NaN();
      }
      t[c] = (c & 0x80) ? -v : v;
    }
    return t;
  }();
  return table;
}

inline const std::array<float, 256>& e8m0_values() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 255; ++c) {
      t[c] = std::ldexp(1.0f, c - 127);
    }
    t[255] = std::numeric_limits<float>::quiet_NaN();
    return t;
  }();
  return table;
}

// Calls f.template operator()<Bits>() for the packed code widths the kernels take.
template <typename F>
void dispatch_quant_bits(int bits, const char* op, F&& f) {
  switch (bits) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    case 4:
      return f.template operator()<4>();
    case 5:
      return f.template operator()<5>();
    case 6:
      return f.template operator()<6>();
    case 8:
      return f.template operator()<8>();
    default:
      throw std::invalid_argument(std::string("[") + op +
                                  "] Unsupported number of bits: " + std::to_string(bits) + ".");
  }
}

}  // namespace mlx::core
