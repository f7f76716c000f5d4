// Binary::eval_gpu and DivMod::eval_gpu: the op's device functor over the dtypes the CPU
// kernel accepts; comparisons write bool.
#include "mlx/backend/common/elementwise_types.h"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/primitives/elementwise.h"

namespace mlx::core {

namespace {

using namespace cu;

template <typename Op, TypeClass kClass>
void run(const array& a, const array& b, array& out, const char* name) {
  dispatch_class<kClass, DeviceTypes>(a.dtype(), name, [&]<typename T>() {
    using Out = decltype(Op{}(std::declval<T>(), std::declval<T>()));
    binary_gpu<Op, T, Out>(a, b, out, name);
  });
}

}  // namespace

void Binary::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& b = inputs[1];
  const char* n = name();
  switch (op_) {
#define CASE(OP, CLASS) \
  case BinaryOp::OP:    \
    return run<op::OP, TypeClass::CLASS>(a, b, out, n);
    MLX_BINARY_OP_TYPES(CASE)
#undef CASE
  }
}

void DivMod::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  Binary(stream(), BinaryOp::FloorDivide).eval_gpu(inputs, outputs[0]);
  Binary(stream(), BinaryOp::Remainder).eval_gpu(inputs, outputs[1]);
}

}  // namespace mlx::core
