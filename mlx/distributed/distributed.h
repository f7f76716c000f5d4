// mx.distributed: process groups and collectives (MLX's names). Until a communication backend
// exists (MPI, NCCL, ring), every process is a group of one: init() returns it and the
// collectives are identities over it, as MLX behaves without a backend.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core::distributed {

// A set of processes that communicate; this process has rank() in [0, size()).
class Group {
 public:
  Group() = default;
  int rank() const { return 0; }
  int size() const { return 1; }
  // The processes of this group with the same `color`, ranked by `key` (default: the rank).
  Group split(int color, int key = -1) const;
};

// Whether a communication backend ("any", "mpi", "ring", "nccl", "jaccl") is available.
bool is_available(const std::string& backend = "any");

// The global group. Without a backend: the group of this process alone, or, with `strict`, a
// runtime_error. An unknown backend name is an invalid_argument.
Group init(bool strict = false, const std::string& backend = "any");

// Collectives over `group` (default: the global group).
array all_sum(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
array all_max(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
array all_min(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
// Concatenation of every process's x along the first axis.
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
