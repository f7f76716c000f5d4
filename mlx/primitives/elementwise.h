// Elementwise primitives: one class per arity, the operation chosen by an enum so that
// backends, transforms and (later) fusion switch over one list.
//
// An op's position in its list is its code in exported files (export/export.cpp): removing or
// reordering ops changes the codes, so it bumps export's format version.
//
// GeluVjp, GeluApproxVjp and SiluVjp take (x, g) and compute g f'(x) for the activation f
// (Gelu, GeluApprox, Silu): the activations' vjps and jvps in one kernel.
#pragma once

#include "mlx/primitives/primitive.h"

namespace mlx::core {

// clang-format off
#define MLX_UNARY_OPS(X) \
  X(Abs) \
  X(Negative) \
  X(Sign) \
  X(Square) \
  X(Sqrt) \
  X(Rsqrt) \
  X(Exp) \
  X(Expm1) \
  X(Log) \
  X(Log2) \
  X(Log10) \
  X(Log1p) \
  X(Sin) \
  X(Cos) \
  X(Tan) \
  X(ArcSin) \
  X(ArcCos) \
  X(ArcTan) \
  X(Sinh) \
  X(Cosh) \
  X(Tanh) \
  X(ArcSinh) \
  X(ArcCosh) \
  X(ArcTanh) \
  X(Erf) \
  X(ErfInv) \
  X(Sigmoid) \
  X(Gelu) \
  X(GeluApprox) \
  X(Silu) \
  X(Floor) \
  X(Ceil) \
  X(Round) \
  X(Trunc) \
  X(LogicalNot) \
  X(BitwiseInvert) \
  X(Conjugate) \
  X(Real) \
  X(Imag) \
  X(IsNaN) \
  X(IsInf) \
  X(IsPosInf) \
  X(IsNegInf) \
  X(IsFinite)

#define MLX_BINARY_OPS(X) \
  X(Add) \
  X(Subtract) \
  X(Multiply) \
  X(Divide) \
  X(Remainder) \
  X(FloorDivide) \
  X(Power) \
  X(Maximum) \
  X(Minimum) \
  X(Equal) \
  X(NotEqual) \
  X(Less) \
  X(LessEqual) \
  X(Greater) \
  X(GreaterEqual) \
  X(LogicalAnd) \
  X(LogicalOr) \
  X(LogAddExp) \
  X(ArcTan2) \
  X(BitwiseAnd) \
  X(BitwiseOr) \
  X(BitwiseXor) \
  X(LeftShift) \
  X(RightShift) \
  X(NaNEqual) \
  X(GeluVjp) \
  X(GeluApproxVjp) \
  X(SiluVjp)
// clang-format on

#define MLX_ENUM_ENTRY(NAME) NAME,
enum class UnaryOp { MLX_UNARY_OPS(MLX_ENUM_ENTRY) };
enum class BinaryOp { MLX_BINARY_OPS(MLX_ENUM_ENTRY) };
#undef MLX_ENUM_ENTRY

const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);

class Unary : public UnaryPrimitive {
 public:
  Unary(Stream stream, UnaryOp op) : UnaryPrimitive(stream), op_(op) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Unary, MLX_ENUM(op_, IsFinite))
  const char* name() const override { return unary_op_name(op_); }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Unary*>(&other);
    return o && o->op_ == op_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  UnaryOp op() const { return op_; }
  MLX_DECLARE_TRANSFORM_RULES

 private:
  UnaryOp op_;
};

// Both inputs have the output's shape (broadcasting happens before, as strided views).
class Binary : public UnaryPrimitive {
 public:
  Binary(Stream stream, BinaryOp op) : UnaryPrimitive(stream), op_(op) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Binary, MLX_ENUM(op_, SiluVjp))
  const char* name() const override { return binary_op_name(op_); }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Binary*>(&other);
    return o && o->op_ == op_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  BinaryOp op() const { return op_; }
  MLX_DECLARE_TRANSFORM_RULES

 private:
  BinaryOp op_;
};

// Quotient and remainder in one pass (two outputs).
class DivMod : public Primitive {
 public:
  explicit DivMod(Stream stream) : Primitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(DivMod)
  const char* name() const override { return "DivMod"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const DivMod*>(&other) != nullptr;
  }
  MLX_DECLARE_TRANSFORM_RULES
};

// where(condition, x, y)
class Select : public UnaryPrimitive {
 public:
  explicit Select(Stream stream) : UnaryPrimitive(stream) {}
  MLX_DECLARE_EVAL
  MLX_SERIALIZABLE(Select)
  const char* name() const override { return "Select"; }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const Select*>(&other) != nullptr;
  }
  // The inputs are broadcast to the output's shape before (dynamically when shapeless).
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  MLX_DECLARE_TRANSFORM_RULES
};

}  // namespace mlx::core
