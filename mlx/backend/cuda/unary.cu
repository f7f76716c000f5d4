// Unary::eval_gpu: the op's device functor over the dtypes the CPU kernel accepts.
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/primitives/elementwise.h"

namespace mlx::core {

namespace {

using namespace cu;

enum class Types { all, real, inexact, floats, ints };

template <typename Op, Types types>
void run_same_type(const array& in, array& out, const char* name) {
  auto body = [&]<typename T>() { unary_gpu<Op, T, T>(in, out, name); };
  if constexpr (types == Types::all) {
    dispatch_all(in.dtype(), name, body);
  } else if constexpr (types == Types::real) {
    dispatch_real(in.dtype(), name, body);
  } else if constexpr (types == Types::inexact) {
    dispatch_inexact(in.dtype(), name, body);
  } else if constexpr (types == Types::floats) {
    dispatch_float(in.dtype(), name, body);
  } else {
    if (in.dtype() == bool_) {
      unary_gpu<Op, bool, bool>(in, out, name);
    } else {
      dispatch_int(in.dtype(), name, body);
    }
  }
}

template <typename Op>
void run_predicate(const array& in, array& out, const char* name) {
  dispatch_all(in.dtype(), name, [&]<typename T>() { unary_gpu<Op, T, bool>(in, out, name); });
}

}  // namespace

void Unary::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  const char* n = name();
  switch (op_) {
#define SAME(OP, FN, TYPES) \
  case UnaryOp::OP:         \
    return run_same_type<op::FN, TYPES>(in, out, n);
    SAME(Abs, Abs, Types::all)
    SAME(Negative, Negative, Types::all)
    SAME(Sign, Sign, Types::all)
    SAME(Square, Square, Types::all)
    SAME(Sqrt, Sqrt, Types::inexact)
    SAME(Rsqrt, Rsqrt, Types::floats)
    SAME(Exp, Exp, Types::inexact)
    SAME(Expm1, Expm1, Types::floats)
    SAME(Log, Log, Types::inexact)
    SAME(Log2, Log2, Types::floats)
    SAME(Log10, Log10, Types::floats)
    SAME(Log1p, Log1p, Types::floats)
    SAME(Sin, Sin, Types::inexact)
    SAME(Cos, Cos, Types::inexact)
    SAME(Tan, Tan, Types::inexact)
    SAME(ArcSin, ArcSin, Types::floats)
    SAME(ArcCos, ArcCos, Types::floats)
    SAME(ArcTan, ArcTan, Types::floats)
    SAME(Sinh, Sinh, Types::inexact)
    SAME(Cosh, Cosh, Types::inexact)
    SAME(Tanh, Tanh, Types::inexact)
    SAME(ArcSinh, ArcSinh, Types::floats)
    SAME(ArcCosh, ArcCosh, Types::floats)
    SAME(ArcTanh, ArcTanh, Types::floats)
    SAME(Erf, Erf, Types::floats)
    SAME(ErfInv, ErfInv, Types::floats)
    SAME(Sigmoid, Sigmoid, Types::floats)
    SAME(Gelu, Gelu, Types::floats)
    SAME(GeluGrad, GeluGrad, Types::floats)
    SAME(Floor, FloorAny, Types::real)
    SAME(Ceil, CeilAny, Types::real)
    SAME(Round, Round, Types::all)
    SAME(Trunc, TruncAny, Types::real)
    SAME(BitwiseInvert, BitwiseInvert, Types::ints)
#undef SAME
    case UnaryOp::Conjugate:
      return unary_gpu<op::Conjugate, complex_t, complex_t>(in, out, n);
    case UnaryOp::Real:
      return unary_gpu<op::Real, complex_t, float>(in, out, n);
    case UnaryOp::Imag:
      return unary_gpu<op::Imag, complex_t, float>(in, out, n);
    case UnaryOp::LogicalNot:
      return run_predicate<op::LogicalNot>(in, out, n);
    case UnaryOp::IsNaN:
      return run_predicate<op::IsNaN>(in, out, n);
    case UnaryOp::IsInf:
      return run_predicate<op::IsInf>(in, out, n);
    case UnaryOp::IsPosInf:
      return run_predicate<op::IsPosInf>(in, out, n);
    case UnaryOp::IsNegInf:
      return run_predicate<op::IsNegInf>(in, out, n);
    case UnaryOp::IsFinite:
      return run_predicate<op::IsFinite>(in, out, n);
  }
}

}  // namespace mlx::core
