// Grouped matrix product primitives (see ops/grouped_matmul.h).
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// Inputs {a (A, M, K), b (B, K, N), lhs, rhs} with the integer index arrays of one shape S;
// out (S..., M, N) with out[i] = a[lhs[i]] @ b[rhs[i]]. The matrices may be row- or
// column-major (b is often a transposed view of the experts' weights).
class GatherMM : public UnaryPrimitive {
 public:
  GatherMM(Stream stream, bool sorted) : UnaryPrimitive(stream), sorted_(sorted) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(GatherMM, sorted_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "GatherMM"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const GatherMM*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool sorted() const { return sorted_; }

 private:
  bool sorted_;  // a hint only: the kernel groups by rhs index either way
};

// Inputs {a (M, K), b (K, N), segments (S..., 2)}; out (S..., M, N).
class SegmentedMM : public UnaryPrimitive {
 public:
  explicit SegmentedMM(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(SegmentedMM)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "SegmentedMM"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const SegmentedMM*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

}  // namespace mlx::core
