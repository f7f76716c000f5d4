// mx.distributed: process groups and collectives (MLX's names). A group is backed by one of a
// closed set of communication backends (mlx/distributed/communicator.h): the TCP ring, MPI
// (loaded at run time) or NCCL (loaded at run time). Without one, every process is a group of
// one: init() returns it and the collectives are identities over it, as in MLX.
//
// The collectives are lazy primitives: they run when evaluated, on the stream they were
// given, and a peer that dies or stays silent for MLX_DISTRIBUTED_TIMEOUT seconds makes the
// evaluation throw on every surviving rank (never a hang).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core::distributed {

namespace detail {
class Communicator;
}

// A set of processes that communicate; this process has rank() in [0, size()).
class Group {
 public:
  // The group of this process alone.
  Group() = default;
  explicit Group(std::shared_ptr<detail::Communicator> comm) : comm_(std::move(comm)) {}
  int rank() const;
  int size() const;
  // The backend's name ("ring", "mpi", "nccl"), or "none" for a group of one.
  std::string backend() const;
  // The processes of this group with the same `color`, ranked by `key` (default: the rank).
  // Every member must call it (it communicates).
  Group split(int color, int key = -1) const;
  // Null for a group of one.
  const std::shared_ptr<detail::Communicator>& communicator() const { return comm_; }

 private:
  std::shared_ptr<detail::Communicator> comm_;
};

// Whether a communication backend ("any", "mpi", "ring", "nccl", "jaccl") can be used here:
// "ring" is built in, "mpi" and "nccl" need their libraries, "jaccl" is never available.
bool is_available(const std::string& backend = "any");

// The global group, created on the first call and returned by later ones. "any" picks the
// backend the environment configures (the launcher sets it: MLX_HOSTFILE + MLX_RANK for the
// ring, mpirun's variables for MPI, MLX_NCCL_* for NCCL); without one the group of this process
// alone, or, with `strict`, a runtime_error. An unknown backend name is an invalid_argument.
Group init(bool strict = false, const std::string& backend = "any");

// Collectives over `group` (default: the global group, as init() returns it).
array all_sum(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
array all_max(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
array all_min(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
// Concatenation of every process's x along the first axis (a scalar counts as shape (1,)).
array all_gather(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
// The sum over processes, split along the first axis: process r keeps the r-th part.
array sum_scatter(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
// Point-to-point: send returns x (for ordering), recv a new array of the given shape and dtype.
// Both need a peer, so in a group of one they are an invalid_argument.
array send(const array& x, int dst, std::optional<Group> group = std::nullopt,
           StreamOrDevice s = {});
array recv(Shape shape, Dtype dtype, int src, std::optional<Group> group = std::nullopt,
           StreamOrDevice s = {});
array recv_like(const array& x, int src, std::optional<Group> group = std::nullopt,
                StreamOrDevice s = {});

}  // namespace mlx::core::distributed
