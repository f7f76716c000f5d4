// Counter-based random bits: Threefry-2x32 (Salmon, Moraes, Dror, Shaw, "Parallel Random
// Numbers: As Easy as 1, 2, 3", SC'11) keyed by uint32 pairs.
#pragma once

#include <array>
#include <cstdint>

#include "mlx/primitives/primitive.h"
#include "mlx/types/host_device.h"

namespace mlx::core {

struct ThreefryBlock {
  uint32_t x0, x1;
  MLX_HOST_DEVICE uint32_t operator[](int i) const { return i == 0 ? x0 : x1; }
};

// Encrypts the counter (c0, c1) under the key (k0, k1) with `Rounds` rounds of Threefry-2x32.
template <int Rounds = 20>
MLX_HOST_DEVICE inline ThreefryBlock threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0,
                                                  uint32_t c1) {
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  uint32_t x0 = c0 + ks[0];
  uint32_t x1 = c1 + ks[1];
  MLX_UNROLL_ALL
  for (int r = 0; r < Rounds; ++r) {
    const int rot = (r % 8 == 0)   ? 13
                    : (r % 8 == 1) ? 15
                    : (r % 8 == 2) ? 26
                    : (r % 8 == 3) ? 6
                    : (r % 8 == 4) ? 17
                    : (r % 8 == 5) ? 29
                    : (r % 8 == 6) ? 16
                                   : 24;
    x0 += x1;
    x1 = (x1 << rot) | (x1 >> (32 - rot));
    x1 ^= x0;
    if (r % 4 == 3) {
      // Key injection after every fourth round.
      const uint32_t s = static_cast<uint32_t>(r / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

// Random words for every key of a batch. Input: uint32 keys of shape (..., 2). Output: shape
// keys.shape[:-1] + shape, unsigned of `width` bytes (1, 2, 4 or 8). The bytes drawn for one key
// are the little-endian words of the blocks threefry2x32(key, (c mod 2^32, c / 2^32)) for
// c = 0, 1, 2, ..., so a smaller draw is a prefix of a larger one.
class RandomBits : public UnaryPrimitive {
 public:
  RandomBits(Stream stream, Shape shape, int width)
      : UnaryPrimitive(stream), shape_(std::move(shape)), width_(width) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(RandomBits, shape_, width_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "RandomBits"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const Shape& shape() const { return shape_; }
  int width() const { return width_; }

 private:
  Shape shape_;
  int width_;
};

}  // namespace mlx::core
