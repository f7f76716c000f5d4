// The collectives as primitives: each runs its group's communicator when evaluated, on the
// stream it was built for. They are never equivalent to one another (every call
// communicates), so common-subexpression merging keeps them all.
#pragma once

#include "mlx/distributed/communicator.h"
#include "mlx/distributed/distributed.h"
#include "mlx/primitives/primitive.h"

namespace mlx::core::distributed {

class DistPrimitive : public UnaryPrimitive {
 public:
  DistPrimitive(Stream stream, Group group) : UnaryPrimitive(stream), group_(std::move(group)) {}
  const Group& group() const { return group_; }

 protected:
  // The communicator, for host buffers (a device-memory one is a clear error).
  detail::Communicator& host_comm() const;

 private:
  Group group_;
};

// out = op over every rank of x (same shape).
class AllReduce : public DistPrimitive {
 public:
  AllReduce(Stream stream, Group group, detail::ReduceOp op)
      : DistPrimitive(stream, std::move(group)), op_(op) {}
  MLX_DECLARE_EVAL
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  detail::ReduceOp op() const { return op_; }

 private:
  detail::ReduceOp op_;
};

// out = every rank's x concatenated along axis 0 (x has at least one axis).
class AllGather : public DistPrimitive {
 public:
  using DistPrimitive::DistPrimitive;
  MLX_DECLARE_EVAL
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "AllGather"; }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

// out = part rank() (along axis 0) of the sum over ranks of x.
class ReduceScatter : public DistPrimitive {
 public:
  using DistPrimitive::DistPrimitive;
  MLX_DECLARE_EVAL
  MLX_DECLARE_TRANSFORM_RULES
  const char* name() const override { return "ReduceScatter"; }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

// Sends x to rank dst; the output is x itself (a view of its buffer), for ordering.
class Send : public DistPrimitive {
 public:
  Send(Stream stream, Group group, int dst) : DistPrimitive(stream, std::move(group)), dst_(dst) {}
  MLX_DECLARE_EVAL
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
  const char* name() const override { return "Send"; }
  bool has_side_effects() const override { return true; }

 private:
  int dst_;
};

// Receives the output (its shape and dtype are the node's) from rank src; no inputs.
class Recv : public DistPrimitive {
 public:
  Recv(Stream stream, Group group, int src) : DistPrimitive(stream, std::move(group)), src_(src) {}
  MLX_DECLARE_EVAL
  const char* name() const override { return "Recv"; }
  bool has_side_effects() const override { return true; }

 private:
  int src_;
};

}  // namespace mlx::core::distributed
