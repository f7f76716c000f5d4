// Transform rules of the collectives, MLX's convention: the result of a collective is the
// same on every rank, so a rank's cotangent of it is already the whole cotangent. all_sum's
// vjp is the identity, all_gather's keeps this rank's rows, sum_scatter's gathers;
// all_max / all_min send the cotangent to the elements that won. vmap keeps the mapped axis
// out of axis 0, the axis the gather and scatter act on.
#include "mlx/distributed/primitives.h"
#include "mlx/ops.h"
#include "mlx/transforms/rule_utils.h"

namespace mlx::core::distributed {

namespace {

// x (mapped along `axis`) with the mapped axis at 1 and at least one axis before it.
array batch_second(const array& x, int axis) {
  array b = mlx::core::detail::batch_first(x, axis);
  if (b.ndim() == 1) {
    return expand_dims(b, 0);
  }
  return moveaxis(b, 0, 1);
}

}  // namespace

std::vector<array> AllReduce::jvp(const std::vector<array>& primals,
                                  const std::vector<array>& tangents, const std::vector<int>&) {
  if (op_ == detail::ReduceOp::sum) {
    return {all_sum(tangents[0], group(), stream())};
  }
  // The tangent of the element that won, averaged over ties.
  array won = astype(equal(primals[0],
                           op_ == detail::ReduceOp::max ? all_max(primals[0], group(), stream())
                                                        : all_min(primals[0], group(), stream()),
                           stream()),
                     tangents[0].dtype(), stream());
  return {divide(all_sum(multiply(won, tangents[0], stream()), group(), stream()),
                 all_sum(won, group(), stream()), stream())};
}

std::vector<array> AllReduce::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>& outputs) {
  if (op_ == detail::ReduceOp::sum) {
    return {cotangents[0]};
  }
  array won = astype(equal(primals[0], outputs[0], stream()), cotangents[0].dtype(), stream());
  return {multiply(won, cotangents[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> AllReduce::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  array x = inputs[0];
  return {{array(x.shape(), x.dtype(), std::make_shared<AllReduce>(stream(), group(), op_), {x})},
          {axes[0]}};
}

std::vector<array> AllGather::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {all_gather(tangents[0], group(), stream())};
}

std::vector<array> AllGather::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>&) {
  const array& c = cotangents[0];
  int rows = primals[0].shape(0);
  Shape start(c.ndim(), 0), stop = c.shape();
  start[0] = group().rank() * rows;
  stop[0] = start[0] + rows;
  return {slice(c, start, stop, stream())};
}

std::pair<std::vector<array>, std::vector<int>> AllGather::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  if (axes[0] < 0) {
    return {{all_gather(inputs[0], group(), stream())}, {-1}};
  }
  return {{all_gather(batch_second(inputs[0], axes[0]), group(), stream())}, {1}};
}

std::vector<array> ReduceScatter::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                      const std::vector<int>&) {
  return {sum_scatter(tangents[0], group(), stream())};
}

std::vector<array> ReduceScatter::vjp(const std::vector<array>&,
                                      const std::vector<array>& cotangents, const std::vector<int>&,
                                      const std::vector<array>&) {
  return {all_gather(cotangents[0], group(), stream())};
}

std::pair<std::vector<array>, std::vector<int>> ReduceScatter::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) {
    return {{sum_scatter(inputs[0], group(), stream())}, {-1}};
  }
  return {{sum_scatter(batch_second(inputs[0], axes[0]), group(), stream())}, {1}};
}

std::pair<std::vector<array>, std::vector<int>> Send::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  return {{send(inputs[0], dst_, group(), stream())}, {axes[0]}};
}

}  // namespace mlx::core::distributed
