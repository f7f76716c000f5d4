#include "mlx/backend/common/elementwise_types.h"
#include "mlx/backend/cpu/elementwise.h"
#include "mlx/backend/cpu/elementwise_bulk.h"
#include "mlx/backend/cpu/elementwise_functors.h"
#include "mlx/primitives/elementwise.h"

namespace mlx::core {

namespace {

using namespace cpu;

template <typename Op, TypeClass kClass>
void run_same_type(const array& in, array& out, const char* name) {
  if constexpr (has_bulk_kernel_v<Op>) {
    if (dispatch_bulk(in.dtype(), [&]<typename T>() {
          unary_loop_bulk<T>(in, out, bulk_for<T, bulk_kernel<Op>()>(), Op{});
        })) {
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
