#include "mlx/backend/common/elementwise_types.h"
#include "mlx/backend/cpu/elementwise.h"
#include "mlx/backend/cpu/elementwise_functors.h"
#include "mlx/backend/cpu/simd/vmath.h"
#include "mlx/primitives/elementwise.h"

namespace mlx::core {

namespace {

using namespace cpu;

// The vectorized float32 kernel of an op, or nullptr (of type std::nullptr_t: comparing a
// function's address with nullptr is not a constant expression under the sanitizers).
template <typename Op>
constexpr auto bulk_kernel() {
#define BULK(OP, FN)                          \
  if constexpr (std::is_same_v<Op, fn::OP>) { \
    return simd::FN;                          \
  } else
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
  BULK(Rsqrt, rsqrt) { return nullptr; }
#undef BULK
}

template <typename Op, TypeClass kClass>
void run_same_type(const array& in, array& out, const char* name) {
  constexpr auto bulk = bulk_kernel<Op>();
  if constexpr (!std::is_same_v<std::decay_t<decltype(bulk)>, std::nullptr_t>) {
    if (in.dtype() == float32) {
      unary_loop_bulk(in, out, bulk, Op{});
      return;
    }
  }
  dispatch_class<kClass>(in.dtype(), name, [&]<typename T>() { unary_loop<T, T>(in, out, Op{}); });
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
#define SAME(OP, CLASS) \
  case UnaryOp::OP:     \
    return run_same_type<fn::OP, TypeClass::CLASS>(in, out, n);
    MLX_UNARY_SAME_TYPE_OPS(SAME)
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
