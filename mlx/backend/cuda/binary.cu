// Binary::eval_gpu and DivMod::eval_gpu: the op's device functor over the dtypes the CPU
// kernel accepts; comparisons write bool.
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/primitives/elementwise.h"

namespace mlx::core {

namespace {

using namespace cu;

enum class Types { all, real, floats, ints };

template <typename Op, typename T>
inline constexpr bool is_predicate_v =
    std::is_same_v<decltype(Op{}(std::declval<T>(), std::declval<T>())), bool> &&
    !std::is_same_v<T, bool>;

template <typename Op, Types types>
void run(const array& a, const array& b, array& out, const char* name) {
  auto body = [&]<typename T>() {
    if constexpr (is_predicate_v<Op, T>) {
      binary_gpu<Op, T, bool>(a, b, out, name);
    } else {
      binary_gpu<Op, T, T>(a, b, out, name);
    }
  };
  if constexpr (types == Types::all) {
    dispatch_all(a.dtype(), name, body);
  } else if constexpr (types == Types::real) {
    dispatch_real(a.dtype(), name, body);
  } else if constexpr (types == Types::floats) {
    dispatch_float(a.dtype(), name, body);
  } else if (a.dtype() == bool_) {
    body.template operator()<bool>();
  } else {
    dispatch_int(a.dtype(), name, body);
  }
}

}  // namespace

void Binary::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& b = inputs[1];
  const char* n = name();
  switch (op_) {
#define CASE(OP, TYPES) \
  case BinaryOp::OP:    \
    return run<op::OP, TYPES>(a, b, out, n);
    CASE(Add, Types::all)
    CASE(Subtract, Types::all)
    CASE(Multiply, Types::all)
    CASE(Divide, Types::all)
    CASE(Remainder, Types::real)
    CASE(FloorDivide, Types::real)
    CASE(Power, Types::all)
    CASE(Maximum, Types::all)
    CASE(Minimum, Types::all)
    CASE(Equal, Types::all)
    CASE(NotEqual, Types::all)
    CASE(Less, Types::all)
    CASE(LessEqual, Types::all)
    CASE(Greater, Types::all)
    CASE(GreaterEqual, Types::all)
    CASE(LogicalAnd, Types::real)
    CASE(LogicalOr, Types::real)
    CASE(LogAddExp, Types::floats)
    CASE(ArcTan2, Types::floats)
    CASE(BitwiseAnd, Types::ints)
    CASE(BitwiseOr, Types::ints)
    CASE(BitwiseXor, Types::ints)
    CASE(LeftShift, Types::ints)
    CASE(RightShift, Types::ints)
    CASE(NaNEqual, Types::all)
#undef CASE
  }
}

void DivMod::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  Binary(stream(), BinaryOp::FloorDivide).eval_gpu(inputs, outputs[0]);
  Binary(stream(), BinaryOp::Remainder).eval_gpu(inputs, outputs[1]);
}

}  // namespace mlx::core
