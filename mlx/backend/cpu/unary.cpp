#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/cpu/elementwise.h"
#include "mlx/backend/cpu/elementwise_functors.h"
#include "mlx/backend/cpu/simd/vmath.h"
#include "mlx/primitives/elementwise.h"

namespace mlx::core {

namespace {

using namespace cpu;

enum class Types { all, real, inexact, floats, ints, complex_only };

// The vectorized float32 kernel of an op, or nullptr.
template <typename Op>
constexpr void (*bulk_kernel())(const float*, float*, int64_t) {
#define BULK(OP, FN)                          \
  if constexpr (std::is_same_v<Op, fn::OP>) { \
    return simd::FN;                          \
  }
  BULK(Exp, exp)
  BULK(Expm1, expm1)
  BULK(Log, log)
  BULK(Log1p, log1p)
  BULK(Log2, log2)
  BULK(Log10, log10)
  BULK(Sin, sin)
  BULK(Cos, cos)
  BULK(Tan, tan)
  BULK(Tanh, tanh)
  BULK(Sigmoid, sigmoid)
  BULK(Erf, erf)
  BULK(ErfInv, erfinv)
  BULK(Gelu, gelu)
  BULK(GeluGrad, gelu_grad)
  BULK(Sinh, sinh)
  BULK(Cosh, cosh)
  BULK(ArcTan, atan)
  BULK(ArcSin, asin)
  BULK(ArcCos, acos)
  BULK(ArcSinh, asinh)
  BULK(ArcCosh, acosh)
  BULK(ArcTanh, atanh)
  BULK(Sqrt, sqrt)
  BULK(Rsqrt, rsqrt)
#undef BULK
  return nullptr;
}

template <typename Op, Types types>
void run_same_type(const array& in, array& out, const char* name) {
  constexpr auto bulk = bulk_kernel<Op>();
  if constexpr (bulk != nullptr) {
    if (in.dtype() == float32) {
      unary_loop_bulk(in, out, bulk, Op{});
      return;
    }
  }
  auto body = [&]<typename T>() { unary_loop<T, T>(in, out, Op{}); };
  if constexpr (types == Types::all) {
    dispatch_all(in.dtype(), name, body);
  } else if constexpr (types == Types::real) {
    dispatch_real(in.dtype(), name, body);
  } else if constexpr (types == Types::inexact) {
    dispatch_inexact(in.dtype(), name, body);
  } else if constexpr (types == Types::floats) {
    dispatch_float(in.dtype(), name, body);
  } else if constexpr (types == Types::ints) {
    if (in.dtype() == bool_) {
      unary_loop<bool, bool>(in, out, Op{});
    } else {
      dispatch_int(in.dtype(), name, body);
    }
  } else {
    unary_loop<complex64_t, complex64_t>(in, out, Op{});
  }
}

template <typename Op>
void run_predicate(const array& in, array& out, const char* name) {
  dispatch_all(in.dtype(), name, [&]<typename T>() { unary_loop<T, bool>(in, out, Op{}); });
}

}  // namespace

void Unary::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  const char* n = name();
  switch (op_) {
#define SAME(OP, TYPES) \
  case UnaryOp::OP:     \
    return run_same_type<fn::OP, TYPES>(in, out, n);
    SAME(Abs, Types::all)
    SAME(Negative, Types::all)
    SAME(Sign, Types::all)
    SAME(Square, Types::all)
    SAME(Sqrt, Types::inexact)
    SAME(Rsqrt, Types::floats)
    SAME(Exp, Types::inexact)
    SAME(Expm1, Types::floats)
    SAME(Log, Types::inexact)
    SAME(Log2, Types::floats)
    SAME(Log10, Types::floats)
    SAME(Log1p, Types::floats)
    SAME(Sin, Types::inexact)
    SAME(Cos, Types::inexact)
    SAME(Tan, Types::inexact)
    SAME(ArcSin, Types::floats)
    SAME(ArcCos, Types::floats)
    SAME(ArcTan, Types::floats)
    SAME(Sinh, Types::inexact)
    SAME(Cosh, Types::inexact)
    SAME(Tanh, Types::inexact)
    SAME(ArcSinh, Types::floats)
    SAME(ArcCosh, Types::floats)
    SAME(ArcTanh, Types::floats)
    SAME(Erf, Types::floats)
    SAME(ErfInv, Types::floats)
    SAME(Sigmoid, Types::floats)
    SAME(Gelu, Types::floats)
    SAME(GeluGrad, Types::floats)
    SAME(Floor, Types::real)
    SAME(Ceil, Types::real)
    SAME(Round, Types::all)
    SAME(Trunc, Types::real)
    SAME(BitwiseInvert, Types::ints)
    SAME(Conjugate, Types::complex_only)
#undef SAME
    case UnaryOp::Real:
      return unary_loop<complex64_t, float>(in, out, fn::Real{});
    case UnaryOp::Imag:
      return unary_loop<complex64_t, float>(in, out, fn::Imag{});
    case UnaryOp::LogicalNot:
      return run_predicate<fn::LogicalNot>(in, out, n);
    case UnaryOp::IsNaN:
      return run_predicate<fn::IsNaN>(in, out, n);
    case UnaryOp::IsInf:
      return run_predicate<fn::IsInf>(in, out, n);
    case UnaryOp::IsPosInf:
      return run_predicate<fn::IsPosInf>(in, out, n);
    case UnaryOp::IsNegInf:
      return run_predicate<fn::IsNegInf>(in, out, n);
    case UnaryOp::IsFinite:
      return run_predicate<fn::IsFinite>(in, out, n);
  }
}

}  // namespace mlx::core
