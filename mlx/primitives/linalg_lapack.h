// LAPACK-backed primitives of mx.linalg. Inputs arrive row-contiguous in float32 or float64
// (the op layer makes them so); matrices are the last two axes, the rest is batch.
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// Inverse of a general, triangular, or Cholesky-factored (A = L L^T / U^T U) matrix.
class Inverse : public UnaryPrimitive {
 public:
  enum class Kind { General, Triangular, Cholesky };
  Inverse(Stream stream, Kind kind, bool upper)
      : UnaryPrimitive(stream), kind_(kind), upper_(upper) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Inverse, MLX_ENUM(kind_, Cholesky), upper_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Inverse"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

 private:
  Kind kind_;
  bool upper_;
};

class Cholesky : public UnaryPrimitive {
 public:
  Cholesky(Stream stream, bool upper) : UnaryPrimitive(stream), upper_(upper) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Cholesky, upper_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Cholesky"; }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }

 private:
  bool upper_;
};

// x = a^-1 b for a: (..., N, N), b: (..., N, K) with equal batch shapes.
class Solve : public UnaryPrimitive {
 public:
  explicit Solve(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Solve)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Solve"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const Solve*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[1].shape()};
  }
};

// Outputs {Q, R} (reduced).
class QRF : public Primitive {
 public:
  explicit QRF(Stream stream) : Primitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(QRF)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "QRF"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const QRF*>(&other) != nullptr;
  }
};

// Outputs {U, S, Vt} (full U and Vt), or {S}.
class SVD : public Primitive {
 public:
  SVD(Stream stream, bool compute_uv) : Primitive(stream), compute_uv_(compute_uv) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(SVD, compute_uv_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "SVD"; }
  bool is_equivalent(const Primitive& other) const override;

 private:
  bool compute_uv_;
};

// Symmetric eigen-decomposition: outputs {w} or {w, V}.
class Eigh : public Primitive {
 public:
  Eigh(Stream stream, bool upper, bool compute_vectors)
      : Primitive(stream), upper_(upper), compute_vectors_(compute_vectors) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Eigh, upper_, compute_vectors_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Eigh"; }
  bool is_equivalent(const Primitive& other) const override;

 private:
  bool upper_;
  bool compute_vectors_;
};

// General eigen-decomposition: outputs {w} or {w, V}, complex64.
class Eig : public Primitive {
 public:
  Eig(Stream stream, bool compute_vectors) : Primitive(stream), compute_vectors_(compute_vectors) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Eig, compute_vectors_)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "Eig"; }
  bool is_equivalent(const Primitive& other) const override;

 private:
  bool compute_vectors_;
};

// LU with partial pivoting: outputs {LU (packed), pivots (uint32, 0-based row interchanges),
// p (uint32, A = L[p] @ U)}.
class LUF : public Primitive {
 public:
  explicit LUF(Stream stream) : Primitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(LUF)
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "LUF"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const LUF*>(&other) != nullptr;
  }
};

}  // namespace mlx::core
