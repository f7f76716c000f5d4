// Host evaluation of the collectives: inputs made dense, then the group's communicator. GPU
// streams reach these too for host backends (backend/cuda/distributed.cpp brings the inputs
// to the host).
#include "mlx/distributed/primitives.h"

#include <stdexcept>

#include "mlx/backend/cpu/copy.h"
#include "mlx/utils.h"

namespace mlx::core::distributed {

detail::Communicator& DistPrimitive::host_comm() const {
  auto& c = *group().communicator();
  if (c.on_device()) {
    throw std::runtime_error(msg("[", name(), "] The ", c.name(),
                                 " backend works on GPU "
                                 "memory: run this collective on a GPU stream (stream=mx.gpu)."));
  }
  return c;
}

namespace {

// `in` itself when it is dense, else a dense copy.
array dense(const array& in) {
  if (in.flags().row_contiguous && in.data_size() == in.size()) {
    return in;
  }
  array out(in.shape(), in.dtype(), nullptr, {});
  cpu::copy_to_contiguous(in, out);
  return out;
}

}  // namespace

const char* AllReduce::name() const {
  switch (op_) {
    case detail::ReduceOp::sum:
      return "AllSum";
    case detail::ReduceOp::max:
      return "AllMax";
    default:
      return "AllMin";
  }
}

void AllReduce::eval_cpu(const std::vector<array>& inputs, array& out) {
  // In place on a dense input nothing else holds; otherwise into a new buffer, so that MPI
  // reads the input where it is instead of a copy.
  const array& x = inputs[0];
  array in = x;
  if (x.flags().row_contiguous && x.data_size() == x.size() && x.is_donatable()) {
    out.copy_shared_buffer(x);
    in = out;
  } else {
    in = dense(x);
    out.set_data(allocator::malloc(out.nbytes()));
  }
  if (out.size() > 0) {
    host_comm().all_reduce(in.data<char>(), out.data<char>(), out.size(), out.dtype(), op_);
  }
}

std::vector<Shape> AllGather::output_shapes(const std::vector<array>& inputs) {
  Shape s = inputs[0].shape();
  s[0] *= group().size();
  return {s};
}

void AllGather::eval_cpu(const std::vector<array>& inputs, array& out) {
  array in = dense(inputs[0]);
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() > 0) {
    host_comm().all_gather(in.data<char>(), out.data<char>(), in.nbytes());
  }
}

std::vector<Shape> ReduceScatter::output_shapes(const std::vector<array>& inputs) {
  Shape s = inputs[0].shape();
  s[0] /= group().size();
  return {s};
}

void ReduceScatter::eval_cpu(const std::vector<array>& inputs, array& out) {
  array in = dense(inputs[0]);
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() > 0) {
    host_comm().reduce_scatter(in.data<char>(), out.data<char>(), out.size(), out.dtype(),
                               detail::ReduceOp::sum);
  }
}

void Send::eval_cpu(const std::vector<array>& inputs, array& out) {
  array in = dense(inputs[0]);
  host_comm().send(in.data<char>(), in.nbytes(), dst_);
  out.copy_shared_buffer(inputs[0]);
}

void Recv::eval_cpu(const std::vector<array>&, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  host_comm().recv(out.data<char>(), out.nbytes(), src_);
}

}  // namespace mlx::core::distributed
