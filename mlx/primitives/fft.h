// Discrete Fourier transforms along one axis, unnormalized (the op layer scales): forward
// X[k] = sum_j x[j] exp(-2 pi i jk / n), inverse with exp(+2 pi i jk / n).
// - complex:   complex64 -> complex64, length n along the axis;
// - real forward (r2c): float32 length n -> complex64 length n / 2 + 1;
// - real inverse (c2r): complex64 length n / 2 + 1 -> float32 length n, reading the input as
//   the first half of a Hermitian spectrum (imaginary parts of the DC and, for even n, the
//   Nyquist bins are ignored).
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

class FFT : public UnaryPrimitive {
 public:
  FFT(Stream stream, int axis, int n, bool inverse, bool real)
      : UnaryPrimitive(stream), axis_(axis), n_(n), inverse_(inverse), real_(real) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(FFT, axis_, n_, inverse_, real_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "FFT"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const FFT*>(&other);
    return o && o->axis_ == axis_ && o->n_ == n_ && o->inverse_ == inverse_ && o->real_ == real_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  int axis() const { return axis_; }
  int n() const { return n_; }  // the transform length
  bool inverse() const { return inverse_; }
  bool real() const { return real_; }

 private:
  int axis_;
  int n_;
  bool inverse_;
  bool real_;
};

// An FFT node over x (the output shape and dtype follow from the transform).
array fft_node(const array& x, int axis, int n, bool inverse, bool real, Stream stream);

}  // namespace mlx::core
