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

// Runs `call(communicator)` on this task's CUDA stream for a group whose communicator works on
// device memory; any other group runs the primitive's host kernel on host copies.
template <typename Call>
void run(DistPrimitive& p, const std::vector<array>& inputs, array& out, Call call) {
  auto& comm = *p.group().communicator();
  if (!comm.on_device()) {
    cu::inputs_to_host(inputs);
    p.eval_cpu(inputs, out);
    return;
  }
  std::lock_guard<std::mutex> lock(device_comm_mutex());
  comm.set_device_stream(cu::stream());
  call(comm);
}

}  // namespace

void AllReduce::eval_gpu(const std::vector<array>& inputs, array& out) {
  run(*this, inputs, out, [&](detail::Communicator& comm) {
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
}

void AllGather::eval_gpu(const std::vector<array>& inputs, array& out) {
  run(*this, inputs, out, [&](detail::Communicator& comm) {
    array in = cu::dense_copy(inputs[0]);
    out.set_gpu_data(allocator::gpu_malloc(out.nbytes()));
    if (out.size() > 0) {
      comm.all_gather(in.gpu_data<char>(), out.gpu_data<char>(), in.nbytes());
    }
  });
}

void ReduceScatter::eval_gpu(const std::vector<array>& inputs, array& out) {
  run(*this, inputs, out, [&](detail::Communicator& comm) {
    array in = cu::dense_copy(inputs[0]);
    out.set_gpu_data(allocator::gpu_malloc(out.nbytes()));
    if (out.size() > 0) {
      comm.reduce_scatter(in.gpu_data<char>(), out.gpu_data<char>(), out.size(), out.dtype(),
                          detail::ReduceOp::sum);
    }
  });
}

void Send::eval_gpu(const std::vector<array>& inputs, array& out) {
  run(*this, inputs, out, [&](detail::Communicator& comm) {
    array in = cu::dense_copy(inputs[0]);
    comm.send(in.gpu_data<char>(), in.nbytes(), dst_);
    out.copy_shared_buffer(inputs[0]);
  });
}

void Recv::eval_gpu(const std::vector<array>& inputs, array& out) {
  run(*this, inputs, out, [&](detail::Communicator& comm) {
    out.set_gpu_data(allocator::gpu_malloc(out.nbytes()));
    comm.recv(out.gpu_data<char>(), out.nbytes(), src_);
  });
}

}  // namespace mlx::core::distributed
