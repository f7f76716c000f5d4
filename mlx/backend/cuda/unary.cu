// Unary::eval_gpu: the op's device functor over the dtypes the CPU kernel accepts.
#include "mlx/backend/common/elementwise_types.h"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/primitives/elementwise.h"

namespace mlx::core {

namespace {

using namespace cu;

template <typename Op, TypeClass kClass>
void run_same_type(const array& in, array& out, const char* name) {
  dispatch_class<kClass, DeviceTypes>(in.dtype(), name,
                                      [&]<typename T>() { unary_gpu<Op, T, T>(in, out, name); });
}

template <typename Op>
void run_predicate(const array& in, array& out, const char* name) {
  dispatch_all<DeviceTypes>(in.dtype(), name,
                            [&]<typename T>() { unary_gpu<Op, T, bool>(in, out, name); });
}

}  // namespace

void Unary::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  const char* n = name();
  switch (op_) {
#define SAME(OP, CLASS) \
  case UnaryOp::OP:     \
    return run_same_type<op::OP, TypeClass::CLASS>(in, out, n);
    MLX_UNARY_SAME_TYPE_OPS(SAME)
#undef SAME
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
