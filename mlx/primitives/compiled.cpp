#include "mlx/primitives/compiled.h"

#include <sstream>
#include <stdexcept>

#include "mlx/ops/creation.h"
#include "mlx/ops/graph.h"
#include "mlx/primitives/reduction.h"
#include "mlx/primitives/shape.h"
#include "mlx/utils.h"

namespace mlx::core {

Compiled::Compiled(Stream stream, std::vector<Dtype> input_dtypes, std::vector<FusedOp> ops,
                   std::vector<int> outputs, FusedReduction reduction)
    : Primitive(stream),
      input_dtypes_(std::move(input_dtypes)),
      ops_(std::move(ops)),
      outputs_(std::move(outputs)),
      reduction_(std::move(reduction)) {
  const int n = num_inputs();
  for (size_t i = 0; i < ops_.size(); ++i) {
    for (int a = 0; a < ops_[i].num_args(); ++a) {
      if (ops_[i].args[a] < 0 || ops_[i].args[a] >= n + static_cast<int>(i)) {
        throw std::invalid_argument(msg("[Compiled] Op ", i, " reads value ", ops_[i].args[a],
                                        ", not computed before it."));
      }
    }
  }
  for (int o : outputs_) {
    if (o < n || o >= n + static_cast<int>(ops_.size())) {
      throw std::invalid_argument(msg("[Compiled] Output value ", o, " is not an op result."));
    }
  }
  if (has_reduction() &&
      (reduction_.value < n || reduction_.value >= n + static_cast<int>(ops_.size()) ||
       reduction_.axes.empty())) {
    throw std::invalid_argument("[Compiled] The reduction must reduce an op result over axes.");
  }
  code_ = listing();
}

bool Compiled::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Compiled*>(&other);
  return o && o->input_dtypes_ == input_dtypes_ && o->ops_ == ops_ && o->outputs_ == outputs_ &&
         o->reduction_ == reduction_;
}

namespace {

// The shape of each value when every op broadcasts only its own operands (the unfused graph).
std::vector<Shape> value_shapes(const Compiled& c, const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (auto& in : inputs) {
    shapes.push_back(in.shape());
  }
  for (auto& op : c.ops()) {
    std::vector<Shape> operands;
    for (int a = 0; a < op.num_args(); ++a) {
      operands.push_back(shapes[op.args[a]]);
    }
    shapes.push_back(broadcast_shapes(operands, "Compiled"));
  }
  return shapes;
}

Shape full_shape(const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (auto& in : inputs) {
    shapes.push_back(in.shape());
  }
  return broadcast_shapes(shapes, "Compiled");
}

}  // namespace

bool Compiled::uniform(const std::vector<array>& inputs) const {
  Shape full = full_shape(inputs);
  auto shapes = value_shapes(*this, inputs);
  for (int o : outputs_) {
    if (shapes[o] != full) {
      return false;
    }
  }
  return !has_reduction() || shapes[reduction_.value] == full;
}

std::vector<Shape> Compiled::output_shapes(const std::vector<array>& inputs) {
  if (!uniform(inputs)) {
    throw std::invalid_argument(
        "[Compiled] The outputs of the fused region do not share one shape for these inputs.");
  }
  Shape full = full_shape(inputs);
  std::vector<Shape> out(outputs_.size(), full);
  if (has_reduction()) {
    for (int a : reduction_.axes) {
      full[a] = 1;
    }
    out.push_back(full);
  }
  return out;
}

std::vector<array> Compiled::expand(const std::vector<array>& inputs) const {
  std::vector<array> values = inputs;
  for (auto& op : ops_) {
    std::vector<array> operands;
    for (int a = 0; a < op.num_args(); ++a) {
      operands.push_back(values[op.args[a]]);
    }
    if (op.kind == FusedOp::Kind::cast) {
      values.push_back(astype(operands[0], op.dtype, stream()));
      continue;
    }
    // Each operand broadcast against the others, as the elementwise ops build them.
    std::vector<array> broadcast;
    for (size_t k = 0; k < operands.size(); ++k) {
      std::vector<array> order = {operands[k]};
      for (size_t j = 0; j < operands.size(); ++j) {
        if (j != k) {
          order.push_back(operands[j]);
        }
      }
      broadcast.push_back(dynamic_broadcast(order, stream()));
    }
    Shape shape = broadcast[0].shape();
    std::shared_ptr<Primitive> p;
    switch (op.kind) {
      case FusedOp::Kind::unary:
        p = std::make_shared<Unary>(stream(), static_cast<UnaryOp>(op.code));
        break;
      case FusedOp::Kind::binary:
        p = std::make_shared<Binary>(stream(), static_cast<BinaryOp>(op.code));
        break;
      default:
        p = std::make_shared<Select>(stream());
        break;
    }
    values.emplace_back(std::move(shape), op.dtype, std::move(p), std::move(broadcast));
  }
  std::vector<array> outs;
  for (int o : outputs_) {
    outs.push_back(values[o]);
  }
  if (has_reduction()) {
    const array& v = values[reduction_.value];
    Shape shape = v.shape();
    for (int a : reduction_.axes) {
      shape[a] = 1;
    }
    auto type = static_cast<Reduce::ReduceType>(reduction_.type);
    outs.emplace_back(std::move(shape), v.dtype(),
                      std::make_shared<Reduce>(stream(), type, reduction_.axes),
                      std::vector<array>{v});
  }
  return outs;
}

std::string Compiled::listing() const {
  std::ostringstream os;
  for (int i = 0; i < num_inputs(); ++i) {
    os << "  in  v" << i << ": " << input_dtypes_[i] << "\n";
  }
  for (size_t i = 0; i < ops_.size(); ++i) {
    auto& op = ops_[i];
    os << "  v" << num_inputs() + i << ": " << op.dtype << " = ";
    switch (op.kind) {
      case FusedOp::Kind::unary:
        os << unary_op_name(static_cast<UnaryOp>(op.code)) << "(v" << op.args[0] << ")";
        break;
      case FusedOp::Kind::binary:
        os << binary_op_name(static_cast<BinaryOp>(op.code)) << "(v" << op.args[0] << ", v"
           << op.args[1] << ")";
        break;
      case FusedOp::Kind::select:
        os << "v" << op.args[0] << " ? v" << op.args[1] << " : v" << op.args[2];
        break;
      case FusedOp::Kind::cast:
        os << "cast<" << op.dtype << ">(v" << op.args[0] << ")";
        break;
    }
    os << "\n";
  }
  os << "  out";
  for (int o : outputs_) {
    os << " v" << o;
  }
  if (has_reduction()) {
    os << " " << Reduce(stream(), static_cast<Reduce::ReduceType>(reduction_.type), {}).name()
       << "(v" << reduction_.value << ", axes " << Shape(reduction_.axes) << ")";
  }
  os << "\n";
  return os.str();
}

void Compiled::print(std::ostream& os) {
  os << "Compiled(" << ops_.size() << " ops, " << num_inputs() << " inputs, " << outputs_.size()
     << " outputs)";
}

}  // namespace mlx::core
