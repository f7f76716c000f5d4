#include "mlx/transforms/matmul_epilogues.h"

#include <memory>
#include <optional>

#include "mlx/primitives/elementwise.h"
#include "mlx/primitives/linalg.h"
#include "mlx/primitives/shape.h"

namespace mlx::core::detail {

namespace {

bool is_gelu_approx_vjp(const Primitive& p) {
  auto* b = dynamic_cast<const Binary*>(&p);
  return b && b->op() == BinaryOp::GeluApproxVjp;
}

}  // namespace

Program fuse_matmul_epilogues(const Program& program, const std::vector<array>& inputs) {
  Program p = program;
  const std::vector<int> producer = producers(p);
  std::vector<int> reads(p.num_values, 0);
  for (const ProgramStep& step : p.steps) {
    for (int in : step.inputs) {
      ++reads[in];
    }
  }
  for (int o : p.outputs) {
    ++reads[o];
  }
  // The step computing v when v is read once, by the step that asks (else -1).
  auto only_reader_of = [&](int v) { return reads[v] == 1 ? producer[v] : -1; };
  std::optional<ValueTypes> types;
  for (ProgramStep& step : p.steps) {
    if (!is_gelu_approx_vjp(*step.primitive)) {
      continue;
    }
    // The derivative's second input: the product, or a reshape of it.
    int product_step = only_reader_of(step.inputs[1]);
    if (product_step >= 0 && dynamic_cast<Reshape*>(p.steps[product_step].primitive.get())) {
      product_step = only_reader_of(p.steps[product_step].inputs[0]);
    }
    if (product_step < 0) {
      continue;
    }
    const ProgramStep& product = p.steps[product_step];
    auto* matmul = dynamic_cast<Matmul*>(product.primitive.get());
    const Dtype dtype = step.dtypes[0];
    if (!matmul || matmul->float32_out() || product.dtypes[0] != dtype ||
        !(dtype == float32 || dtype == float16 || dtype == bfloat16) ||
        !(product.primitive->stream() == step.primitive->stream())) {
      continue;
    }
    if (!types) {
      types.emplace(p, inputs);
    }
    if (types->shapes[product.inputs[0]].size() != 2 ||
        types->shapes[product.inputs[1]].size() != 2) {
      continue;
    }
    const std::vector<int> operands{product.inputs[0], product.inputs[1], step.inputs[0]};
    step.primitive = std::make_shared<MatmulGeluApproxVjp>(step.primitive->stream());
    step.inputs = operands;
  }
  return p;
}

}  // namespace mlx::core::detail
