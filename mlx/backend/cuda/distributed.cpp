// The distributed primitives on a GPU stream. A group whose communicator works on device memory
// (NCCL) gets device pointers and this task's CUDA stream; any other backend (ring, MPI) takes
// host buffers, so the primitive runs its host kernel after bringing the inputs over.
#include <mutex>

#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/host_fallback.h"
#include "mlx/backend/cuda/runtime.h"
#include "mlx/distributed/primitives.h"

namespace mlx::core::distributed {

namespace {

// Setting the stream and enqueueing must not interleave between two GPU streams' threads; NCCL
// also wants every rank to issue its collectives in one order, which one lock keeps per process.
std::mutex& device_comm_mutex() {
  static std::mutex m;
  return m;
}

// Runs `call(communicator)` on this task's CUDA stream, or returns false for a host backend.
template <typename Call>
bool on_device_comm(const Group& group, Call call) {
  auto& comm = *group.communicator();
  if (!comm.on_device()) {
    return false;
  }
  std::lock_guard<std::mutex> lock(device_comm_mutex());
  comm.set_device_stream(cu::stream());
  call(comm);
  return true;
}

void host_kernel(const std::vector<array>& inputs, array& out, UnaryPrimitive& p) {
  cu::inputs_to_host(inputs);
  p.eval_cpu(inputs, out);
}

}  // namespace

void AllReduce::eval_gpu(const std::vector<array>& inputs, array& out) {
  bool done = on_device_comm(group(), [&](detail::Communicator& comm) {
    array in = cu::dense_copy(inputs[0]);
    if (in.is_donatable()) {
      out.copy_shared_buffer(in);
    } else {
      out.set_gpu_data(allocator::gpu_malloc(out.nbytes()));
    }
    if (out.size() > 0) {
      comm.all_reduce(in.gpu_data<char>(), out.gpu_data<char>(), out.size(), out.dtype(), op_);
    }
  });
  if (!done) {
    host_kernel(inputs, out, *this);
  }
}

void AllGather::eval_gpu(const std::vector<array>& inputs, array& out) {
  bool done = on_device_comm(group(), [&](detail::Communicator& comm) {
    array in = cu::dense_copy(inputs[0]);
    out.set_gpu_data(allocator::gpu_malloc(out.nbytes()));
    if (out.size() > 0) {
      comm.all_gather(in.gpu_data<char>(), out.gpu_data<char>(), in.nbytes());
    }
  });
  if (!done) {
    host_kernel(inputs, out, *this);
  }
}

void ReduceScatter::eval_gpu(const std::vector<array>& inputs, array& out) {
  bool done = on_device_comm(group(), [&](detail::Communicator& comm) {
    array in = cu::dense_copy(inputs[0]);
    out.set_gpu_data(allocator::gpu_malloc(out.nbytes()));
    if (out.size() > 0) {
      comm.reduce_scatter(in.gpu_data<char>(), out.gpu_data<char>(), out.size(), out.dtype(),
                          detail::ReduceOp::sum);
    }
  });
  if (!done) {
    host_kernel(inputs, out, *this);
  }
}

void Send::eval_gpu(const std::vector<array>& inputs, array& out) {
  bool done = on_device_comm(group(), [&](detail::Communicator& comm) {
    array in = cu::dense_copy(inputs[0]);
    comm.send(in.gpu_data<char>(), in.nbytes(), dst_);
    out.copy_shared_buffer(inputs[0]);
  });
  if (!done) {
    host_kernel(inputs, out, *this);
  }
}

void Recv::eval_gpu(const std::vector<array>& inputs, array& out) {
  bool done = on_device_comm(group(), [&](detail::Communicator& comm) {
    out.set_gpu_data(allocator::gpu_malloc(out.nbytes()));
    comm.recv(out.gpu_data<char>(), out.nbytes(), src_);
  });
  if (!done) {
    host_kernel(inputs, out, *this);
  }
}

}  // namespace mlx::core::distributed
