#include "mlx/transforms/matmul_epilogues.h"

#include <memory>
#include <optional>

#include "mlx/primitives/elementwise.h"
#include "mlx/primitives/linalg.h"
#include "mlx/primitives/shape.h"

namespace mlx::core::detail {

namespace {

bool is_unary(const Primitive& p, UnaryOp op) {
  auto* u = dynamic_cast<const Unary*>(&p);
  return u && u->op() == op;
}

bool is_binary(const Primitive& p, BinaryOp op) {
  auto* b = dynamic_cast<const Binary*>(&p);
  return b && b->op() == op;
}

class EpiloguePass {
 public:
  EpiloguePass(const Program& program, const std::vector<array>& inputs)
      : p_(program), inputs_(inputs), producer_(producers(p_)), reads_(p_.num_values, 0) {
    for (const ProgramStep& step : p_.steps) {
      for (int in : step.inputs) {
        ++reads_[in];
      }
    }
    for (int o : p_.outputs) {
      ++reads_[o];
    }
  }

  Program run() {
    for (ProgramStep& step : p_.steps) {
      if (is_unary(*step.primitive, UnaryOp::GeluApprox)) {
        fuse_gelu(step);
      } else if (is_binary(*step.primitive, BinaryOp::GeluApproxVjp)) {
        fuse_gelu_vjp(step);
      }
    }
    return std::move(p_);
  }

 private:
  // gelu_approx(reshape(a @ b [+ bias])) where nothing else reads the product (inference): the
  // product's step applies the GELU, and the GELU's readers read its (reshaped) value instead.
  void fuse_gelu(const ProgramStep& gelu) {
    const int ps = product_under(gelu.inputs[0]);
    if (ps < 0) {
      return;
    }
    ProgramStep& product = p_.steps[ps];
    std::vector<int> operands;
    if (auto* matmul = dynamic_cast<Matmul*>(product.primitive.get());
        matmul && !matmul->float32_out()) {
      operands = {product.inputs[0], product.inputs[1]};
    } else if (auto* addmm = dynamic_cast<AddMM*>(product.primitive.get());
               addmm && addmm->alpha() == 1 && addmm->beta() == 1) {
      operands = {product.inputs[1], product.inputs[2], product.inputs[0]};
    } else {
      return;
    }
    if (!fusable(product, gelu) ||
        (operands.size() == 3 && types().shapes[operands[2]] != Shape{1, product.shapes[0][1]})) {
      return;
    }
    product.primitive = std::make_shared<MatmulGeluApprox>(product.primitive->stream());
    product.inputs = std::move(operands);
    read_instead(gelu.first_output, gelu.inputs[0]);
  }

  // gelu_approx_vjp(h, reshape(dy @ W)) where nothing else reads the product: one step.
  void fuse_gelu_vjp(ProgramStep& vjp) {
    const int ps = product_under(vjp.inputs[1]);
    if (ps < 0) {
      return;
    }
    const ProgramStep& product = p_.steps[ps];
    auto* matmul = dynamic_cast<Matmul*>(product.primitive.get());
    if (!matmul || matmul->float32_out() || !fusable(product, vjp)) {
      return;
    }
    std::vector<int> operands{product.inputs[0], product.inputs[1], vjp.inputs[0]};
    vjp.primitive = std::make_shared<MatmulGeluApproxVjp>(vjp.primitive->stream());
    vjp.inputs = std::move(operands);
  }

  // The step computing value v, or the product under a reshape computing it, where each is
  // read only once (by the step that asks); else -1.
  int product_under(int v) const {
    int s = only_reader_of(v);
    if (s >= 0 && dynamic_cast<Reshape*>(p_.steps[s].primitive.get())) {
      s = only_reader_of(p_.steps[s].inputs[0]);
    }
    return s;
  }

  int only_reader_of(int v) const { return reads_[v] == 1 ? producer_[v] : -1; }

  // A product of 2-D operands on the elementwise step's stream, both of its floating dtype.
  bool fusable(const ProgramStep& product, const ProgramStep& elementwise) {
    const Dtype dtype = elementwise.dtypes[0];
    return product.dtypes[0] == dtype &&
           (dtype == float32 || dtype == float16 || dtype == bfloat16) &&
           product.primitive->stream() == elementwise.primitive->stream() &&
           types().shapes[product.inputs.end()[-2]].size() == 2 &&
           types().shapes[product.inputs.back()].size() == 2;
  }

  // Every read of value `from` (by the later steps and the program's outputs) reads `to`.
  void read_instead(int from, int to) {
    for (ProgramStep& step : p_.steps) {
      for (int& in : step.inputs) {
        if (in == from) {
          in = to;
        }
      }
    }
    for (int& o : p_.outputs) {
      if (o == from) {
        o = to;
      }
    }
    reads_[to] += reads_[from];
    reads_[from] = 0;
  }

  const ValueTypes& types() {
    if (!types_) {
      types_.emplace(p_, inputs_);
    }
    return *types_;
  }

  Program p_;
  const std::vector<array>& inputs_;
  const std::vector<int> producer_;
  std::vector<int> reads_;
  std::optional<ValueTypes> types_;
};

}  // namespace

Program fuse_matmul_epilogues(const Program& program, const std::vector<array>& inputs) {
  return EpiloguePass(program, inputs).run();
}

}  // namespace mlx::core::detail
