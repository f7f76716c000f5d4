#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/elementwise_types.h"
#include "mlx/backend/cpu/elementwise.h"
#include "mlx/backend/cpu/elementwise_bulk.h"
#include "mlx/backend/cpu/elementwise_functors.h"
#include "mlx/primitives/elementwise.h"

namespace mlx::core {

namespace {

using namespace cpu;

template <typename Op, TypeClass kClass>
void run(const array& a, const array& b, array& out, const char* name) {
  if constexpr (has_binary_bulk_kernel_v<Op>) {
    if (dispatch_bulk(a.dtype(), [&]<typename T>() {
          binary_loop_bulk<T>(a, b, out, bulk_for<T, binary_bulk_kernel<Op>()>(), Op{});
        })) {
      return;
    }
  }
  dispatch_class<kClass>(a.dtype(), name, [&]<typename T>() {
    using Out = decltype(Op{}(T{}, T{}));
    binary_loop<T, Out>(a, b, out, Op{});
  });
}

// Power with a broadcast scalar exponent that is a small integer (fn::PowerByInteger).
// Returns false when the exponent does not qualify.
bool power_by_small_integer(const array& a, const array& b, array& out) {
  if (!is_floating_point(a.dtype()) || b.data_size() != 1) {
    return false;
  }
  double k = dispatch_float(b.dtype(), "Power",
                            [&]<typename T>() { return cast_value<double>(*b.data<T>()); });
  int n;
  if (!fn::small_integer_exponent(k, n)) {
    return false;
  }
  dispatch_float(a.dtype(), "Power",
                 [&]<typename T>() { unary_loop<T, T>(a, out, fn::PowerByInteger{n}); });
  return true;
}

}  // namespace

void Binary::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& b = inputs[1];
  const char* n = name();
  if (op_ == BinaryOp::Power && power_by_small_integer(a, b, out)) {
    return;
  }
  switch (op_) {
#define CASE(OP, CLASS) \
  case BinaryOp::OP:    \
    return run<fn::OP, TypeClass::CLASS>(a, b, out, n);
    MLX_BINARY_OP_TYPES(CASE)
#undef CASE
  }
}

void DivMod::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  Binary(stream(), BinaryOp::FloorDivide).eval_cpu(inputs, outputs[0]);
  Binary(stream(), BinaryOp::Remainder).eval_cpu(inputs, outputs[1]);
}

namespace {
template <typename T>
void select_loop(const array& cond, const array& x, const array& y, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  auto layout =
      collapse_dims<4>(out.shape(), {cond.strides(), x.strides(), y.strides(), out.strides()});
  int64_t sc = layout.strides[0].back(), sx = layout.strides[1].back(),
          sy = layout.strides[2].back();
  const bool* pc = cond.data<bool>();
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  T* dst = out.data<T>();
  parallel_rows(layout, sizeof(T), [&](const std::array<int64_t, 4>& off, int64_t len) {
    const bool* c = pc + off[0];
    const T* xs = px + off[1];
    const T* ys = py + off[2];
    T* d = dst + off[3];
    for (int64_t i = 0; i < len; ++i) {
      d[i] = c[i * sc] ? xs[i * sx] : ys[i * sy];
    }
  });
}
}  // namespace

void Select::eval_cpu(const std::vector<array>& inputs, array& out) {
  if (out.size() == 0) {
    out.set_data(allocator::malloc(0));
    return;
  }
  dispatch_by_size(out.itemsize(), "where",
                   [&]<typename T>() { select_loop<T>(inputs[0], inputs[1], inputs[2], out); });
}

}  // namespace mlx::core
