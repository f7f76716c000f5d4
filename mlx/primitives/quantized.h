// Products with a quantized matrix (MLX's packed layouts, see ops/quantized.h).
#pragma once

#include <string>

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// affine: codes q with a scale and a bias per group (w ~ s q + b); mxfp4 / mxfp8: E2M1 / E4M3
// elements with an E8M0 scale per 32; nvfp4: E2M1 elements with an E4M3 scale per 16 (and an
// optional global scale).
enum class QuantMode { affine, mxfp4, mxfp8, nvfp4 };

// The mode named `mode`; anything else throws std::invalid_argument naming `op`.
QuantMode quant_mode(const std::string& mode, const char* op);
const char* quant_mode_name(QuantMode mode);

// What both quantized products carry: the quantization of the stored matrices and whether
// they are used transposed (x @ W.T for W (N, K) quantized along K, else x @ W for W (K, N)
// quantized along N).
class QuantizedProduct : public UnaryPrimitive {
 public:
  QuantizedProduct(Stream stream, int group_size, int bits, bool transpose, QuantMode mode)
      : UnaryPrimitive(stream),
        group_size_(group_size),
        bits_(bits),
        transpose_(transpose),
        mode_(mode) {}
  int group_size() const { return group_size_; }
  int bits() const { return bits_; }
  bool transpose() const { return transpose_; }
  QuantMode mode() const { return mode_; }

 protected:
  bool same_quantization(const QuantizedProduct& o) const {
    return o.group_size_ == group_size_ && o.bits_ == bits_ && o.transpose_ == transpose_ &&
           o.mode_ == mode_;
  }
  int group_size_;
  int bits_;
  bool transpose_;
  QuantMode mode_;
};

// Inputs {x (M, K) row-contiguous in the output dtype, w, scales, then biases (affine)}.
class QuantizedMatmul : public QuantizedProduct {
 public:
  QuantizedMatmul(Stream stream, int group_size, int bits, bool transpose,
                  QuantMode mode = QuantMode::affine)
      : QuantizedProduct(stream, group_size, bits, transpose, mode) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(QuantizedMatmul, group_size_, bits_, transpose_, MLX_ENUM(mode_, nvfp4))
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "QuantizedMatmul"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const QuantizedMatmul*>(&other);
    return o && same_quantization(*o);
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

// Inputs {x (X, M, K), w (E, ...), scales (E, ...), then biases (affine) or the float32 global
// scale (nvfp4, optional), then lhs (S), rhs (S)}: out (S..., M, N) with
// out[i] = x[lhs[i]] @ W[rhs[i]] (transposed as in QuantizedMatmul).
class GatherQMM : public QuantizedProduct {
 public:
  GatherQMM(Stream stream, int group_size, int bits, bool transpose, QuantMode mode, bool sorted)
      : QuantizedProduct(stream, group_size, bits, transpose, mode), sorted_(sorted) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(GatherQMM, group_size_, bits_, transpose_, MLX_ENUM(mode_, nvfp4), sorted_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "GatherQMM"; }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const GatherQMM*>(&other);
    return o && same_quantization(*o);
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool sorted() const { return sorted_; }

 private:
  bool sorted_;  // a hint only: the kernel groups by rhs index either way
};

}  // namespace mlx::core
