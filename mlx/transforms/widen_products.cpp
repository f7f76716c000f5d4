#include "mlx/transforms/widen_products.h"

#include <vector>

#include "mlx/primitives/linalg.h"
#include "mlx/primitives/reduction.h"
#include "mlx/primitives/shape.h"

namespace mlx::core::detail {

namespace {

bool is_half(Dtype t) { return t == float16 || t == bfloat16; }

// An unevaluated node read through `handles` handles and nothing else (an output of a
// multi-output step also has its group's reference).
bool held_only_by(const array& x, long handles) {
  return x.status() == array::Status::unscheduled && x.has_primitive() &&
         x.use_count() == handles + (x.has_siblings() ? 1 : 0);
}

// Steps whose output dtype is their input's whatever it is: views of it (Transpose, Reshape)
// and sums of a floating input (Broadcast's vjp sums a broadcast weight's cotangent), which
// accumulate in float32 for 16-bit inputs anyway. They are retyped with the product.
bool follows_input_dtype(const array& x) {
  Primitive& p = x.primitive();
  if (x.inputs().size() != 1 || x.inputs()[0].dtype() != x.dtype()) {
    return false;
  }
  auto* r = dynamic_cast<Reduce*>(&p);
  return dynamic_cast<Transpose*>(&p) || dynamic_cast<Reshape*>(&p) ||
         (r && r->type() == Reduce::Sum);
}

// The primitive of `out`'s step with `out` stored in float32, or null when the step is not a
// product of 16-bit operands of out's dtype that stores it in that dtype.
std::shared_ptr<Primitive> with_float32_output(const array& out) {
  const auto& inputs = out.inputs();
  if (inputs.size() != 2 || inputs[0].dtype() != out.dtype() || inputs[1].dtype() != out.dtype()) {
    return nullptr;
  }
  Primitive& p = out.primitive();
  if (auto* m = dynamic_cast<Matmul*>(&p); m && !m->float32_out()) {
    return std::make_shared<Matmul>(p.stream(), true);
  }
  if (auto* m = dynamic_cast<MatmulColumnSums*>(&p)) {
    const uint8_t bit = uint8_t(1) << out.sibling_position();
    if (!(m->float32_outputs() & bit)) {
      return std::make_shared<MatmulColumnSums>(p.stream(), m->float32_outputs() | bit);
    }
  }
  return nullptr;
}

}  // namespace

std::optional<array> widen_product_cotangent(const array& cotangent) {
  if (!is_half(cotangent.dtype())) {
    return std::nullopt;
  }
  // Down to the product; pointers, so that the walk adds no references.
  std::vector<const array*> chain;
  const array* x = &cotangent;
  while (held_only_by(*x, 1) && follows_input_dtype(*x)) {
    chain.push_back(x);
    x = &x->inputs()[0];
  }
  if (!held_only_by(*x, 1)) {
    return std::nullopt;
  }
  auto widened = with_float32_output(*x);
  if (!widened) {
    return std::nullopt;
  }
  array product = *x;
  product.rewrite_primitive(std::move(widened));
  product.rewrite_dtype(float32);
  for (const array* c : chain) {
    array step = *c;
    step.rewrite_dtype(float32);
  }
  return cotangent;
}

}  // namespace mlx::core::detail
