// The dtypes each elementwise op accepts, shared by every backend's kernels (the functors of the
// same names live in each backend). Unary ops listed here return their input's dtype; Real,
// Imag and the predicates are dispatched by each backend on its own.
#pragma once

#include "mlx/backend/common/dispatch.h"

// clang-format off
#define MLX_UNARY_SAME_TYPE_OPS(X) \
  X(Abs, all) X(Negative, all) X(Sign, all) X(Square, all) \
  X(Sqrt, inexact) X(Rsqrt, floats) X(Exp, inexact) X(Expm1, floats) \
  X(Log, inexact) X(Log2, floats) X(Log10, floats) X(Log1p, floats) \
  X(Sin, inexact) X(Cos, inexact) X(Tan, inexact) \
  X(ArcSin, floats) X(ArcCos, floats) X(ArcTan, floats) \
  X(Sinh, inexact) X(Cosh, inexact) X(Tanh, inexact) \
  X(ArcSinh, floats) X(ArcCosh, floats) X(ArcTanh, floats) \
  X(Erf, floats) X(ErfInv, floats) X(Sigmoid, floats) X(Gelu, floats) X(GeluApprox, floats) \
  X(Silu, floats) \
  X(Floor, real) X(Ceil, real) X(Round, all) X(Trunc, real) \
  X(BitwiseInvert, ints) X(Conjugate, complex_only)

#define MLX_BINARY_OP_TYPES(X) \
  X(Add, all) X(Subtract, all) X(Multiply, all) X(Divide, all) \
  X(Remainder, real) X(FloorDivide, real) X(Power, all) X(Maximum, all) X(Minimum, all) \
  X(Equal, all) X(NotEqual, all) X(Less, all) X(LessEqual, all) X(Greater, all) \
  X(GreaterEqual, all) X(LogicalAnd, real) X(LogicalOr, real) X(LogAddExp, floats) \
  X(ArcTan2, floats) X(BitwiseAnd, ints) X(BitwiseOr, ints) X(BitwiseXor, ints) \
  X(LeftShift, ints) X(RightShift, ints) X(NaNEqual, all) \
  X(GeluVjp, floats) X(GeluApproxVjp, floats) X(SiluVjp, floats)
// clang-format on
