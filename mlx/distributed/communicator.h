// The backend interface of mx.distributed: a closed set of implementations, one file each
// (ring.cpp, mpi.cpp, nccl.cpp). Buffers are dense; the primitives (primitives.cpp) make them
// so. Every method may throw (a dead or silent peer, past the timeout, is a runtime_error that
// names the backend, the operation and the peer); after one does, the communicator is
// unusable and says so.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "mlx/dtype.h"

namespace mlx::core::distributed::detail {

enum class ReduceOp { sum, max, min };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* name() const = 0;

  // out[0, count) = the reduction over ranks of in[0, count); in == out reduces in place.
  virtual void all_reduce(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) = 0;
  // out[r * bytes, (r + 1) * bytes) = rank r's `in`.
  virtual void all_gather(const void* in, void* out, size_t bytes) = 0;
  // out[0, count) = part `rank()` of the reduction of `in` (size() * count elements).
  virtual void reduce_scatter(const void* in, void* out, size_t count, Dtype dtype,
                              ReduceOp op) = 0;
  virtual void send(const void* data, size_t bytes, int dst) = 0;
  virtual void recv(void* data, size_t bytes, int src) = 0;
  // The members with the same color, ordered by (key, rank); a collective over this group.
  virtual std::shared_ptr<Communicator> split(int color, int key) = 0;

  // Whether the buffers are device memory (NCCL). Such a communicator enqueues its work on
  // the CUDA stream (a cudaStream_t) last given to set_device_stream: the GPU backend's
  // kernels for the distributed primitives set it, then call the collective with device
  // pointers. The host kernels (primitives.cpp) refuse these communicators.
  virtual bool on_device() const { return false; }
  virtual void set_device_stream(void* /*stream*/) {}
};

// Each backend's entry points; `init` returns null when the environment does not configure
// it (strict: throws why), `available` whether it could be used here.
std::shared_ptr<Communicator> ring_init(bool strict);
bool ring_available();
std::shared_ptr<Communicator> mpi_init(bool strict);
bool mpi_available();
std::shared_ptr<Communicator> nccl_init(bool strict);
bool nccl_available();

// MLX_DISTRIBUTED_TIMEOUT in seconds (default 300): how long any backend waits for a peer
// that neither sends nor receives before it gives up.
double timeout_seconds();

// dst[i] = op(dst[i], src[i]) for `count` elements of `dtype` (bool: or / and).
void reduce_into(void* dst, const void* src, size_t count, Dtype dtype, ReduceOp op);

// The ranks of a split: the members of `color` as (key, rank) pairs from every rank
// (colors[r], keys[r]), sorted; returns the position of `rank` and the members in order.
std::vector<int> split_members(const std::vector<int>& colors, const std::vector<int>& keys,
                               int rank, int* new_rank);

}  // namespace mlx::core::distributed::detail
