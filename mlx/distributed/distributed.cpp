#include "mlx/distributed/distributed.h"

#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "mlx/distributed/communicator.h"
#include "mlx/distributed/primitives.h"
#include "mlx/ops.h"
#include "mlx/utils.h"

namespace mlx::core::distributed {

namespace {

void check_backend(const std::string& backend, const char* op) {
  for (const char* known : {"any", "mpi", "ring", "nccl", "jaccl"}) {
    if (backend == known) {
      return;
    }
  }
  throw std::invalid_argument(msg("[", op, "] Unknown backend '", backend,
                                  "'; expected one of 'any', 'mpi', 'ring', 'nccl', 'jaccl'."));
}

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

// The backend the environment configures: MLX_DISTRIBUTED_BACKEND (mlx.launch sets it), else
// the ring's variables, else mpirun's.
std::string configured_backend() {
  if (env_set("MLX_DISTRIBUTED_BACKEND"))
    return std::getenv("MLX_DISTRIBUTED_BACKEND");
  if (env_set("MLX_HOSTFILE") && env_set("MLX_RANK"))
    return "ring";
  if (env_set("OMPI_COMM_WORLD_SIZE") || env_set("PMI_SIZE") || env_set("PMIX_RANK")) {
    return "mpi";
  }
  return "";
}

std::shared_ptr<detail::Communicator> start(const std::string& backend, bool strict) {
  if (backend == "ring")
    return detail::ring_init(strict);
  if (backend == "mpi")
    return detail::mpi_init(strict);
  if (backend == "nccl")
    return detail::nccl_init(strict);
  if (strict) {
    throw std::runtime_error(msg("[distributed.init] Backend '", backend,
                                 "' is not available in this build (strict=True)."));
  }
  return nullptr;
}

Group resolve(const std::optional<Group>& group) { return group ? *group : init(); }

[[noreturn]] void no_peer(const char* op, int peer) {
  throw std::invalid_argument(msg("[", op, "] Rank ", peer,
                                  " is not a peer: the group has one process (no distributed "
                                  "backend is configured), so there is no one to talk to."));
}

void check_peer(const Group& g, int peer, const char* op) {
  if (g.size() == 1)
    no_peer(op, peer);
  if (peer < 0 || peer >= g.size() || peer == g.rank()) {
    throw std::invalid_argument(msg("[", op, "] Rank ", peer, " is not a peer of rank ", g.rank(),
                                    " in a group of size ", g.size(), "."));
  }
}

template <typename P, typename... Args>
array node(Shape shape, const array& x, const Group& g, StreamOrDevice s, Args... args) {
  return array(std::move(shape), x.dtype(), std::make_shared<P>(to_stream(s), g, args...), {x});
}

array reduce(const array& x, const std::optional<Group>& group, StreamOrDevice s,
             detail::ReduceOp op) {
  Group g = resolve(group);
  if (g.size() == 1)
    return x;
  return node<AllReduce>(x.shape(), x, g, s, op);
}

}  // namespace

int Group::rank() const { return comm_ ? comm_->rank() : 0; }
int Group::size() const { return comm_ ? comm_->size() : 1; }
std::string Group::backend() const { return comm_ ? comm_->name() : "none"; }

Group Group::split(int color, int key) const {
  if (!comm_)
    return Group{};
  if (color < 0) {
    throw std::invalid_argument(msg("[Group.split] color must be non-negative; got ", color, "."));
  }
  return Group(comm_->split(color, key));
}

bool is_available(const std::string& backend) {
  check_backend(backend, "distributed.is_available");
  if (backend == "ring" || backend == "any")
    return detail::ring_available();
  if (backend == "mpi")
    return detail::mpi_available();
  if (backend == "nccl")
    return detail::nccl_available();
  return false;
}

Group init(bool strict, const std::string& backend) {
  check_backend(backend, "distributed.init");
  static std::mutex mutex;
  static std::optional<Group> global;
  std::lock_guard<std::mutex> lock(mutex);
  // A started backend is kept; a group of one is asked again only by strict or named calls.
  if (global && global->size() > 1 && (backend == "any" || backend == global->backend())) {
    return *global;
  }
  if (global && !strict && backend == "any") {
    return *global;
  }
  std::string chosen = backend == "any" ? configured_backend() : backend;
  std::shared_ptr<detail::Communicator> comm;
  if (!chosen.empty()) {
    comm = start(chosen, strict);
  } else if (strict) {
    throw std::runtime_error(
        "[distributed.init] No distributed backend is configured (strict=True): start the "
        "program with mlx.launch or mpirun.");
  }
  global = comm ? Group(comm) : Group{};
  return *global;
}

array all_sum(const array& x, std::optional<Group> group, StreamOrDevice s) {
  return reduce(x, group, s, detail::ReduceOp::sum);
}
array all_max(const array& x, std::optional<Group> group, StreamOrDevice s) {
  return reduce(x, group, s, detail::ReduceOp::max);
}
array all_min(const array& x, std::optional<Group> group, StreamOrDevice s) {
  return reduce(x, group, s, detail::ReduceOp::min);
}

array all_gather(const array& x, std::optional<Group> group, StreamOrDevice s) {
  Group g = resolve(group);
  if (g.size() == 1)
    return x;
  array in = x.ndim() == 0 ? reshape(x, {1}, s) : x;
  Shape shape = in.shape();
  shape[0] *= g.size();
  return node<AllGather>(shape, in, g, s);
}

array sum_scatter(const array& x, std::optional<Group> group, StreamOrDevice s) {
  Group g = resolve(group);
  if (g.size() == 1)
    return x;
  if (x.ndim() == 0 || x.shape(0) % g.size() != 0) {
    throw std::invalid_argument(msg("[sum_scatter] The first axis (shape ", x.shape(),
                                    ") must split evenly over the ", g.size(),
                                    " processes of the group."));
  }
  Shape shape = x.shape();
  shape[0] /= g.size();
  return node<ReduceScatter>(shape, x, g, s);
}

array send(const array& x, int dst, std::optional<Group> group, StreamOrDevice s) {
  Group g = resolve(group);
  check_peer(g, dst, "send");
  return node<Send>(x.shape(), x, g, s, dst);
}

array recv(Shape shape, Dtype dtype, int src, std::optional<Group> group, StreamOrDevice s) {
  Group g = resolve(group);
  check_peer(g, src, "recv");
  for (int d : shape) {
    if (d < 0) {
      throw std::invalid_argument(msg("[recv] Negative dimension in shape ", shape, "."));
    }
  }
  return array(std::move(shape), dtype, std::make_shared<Recv>(to_stream(s), g, src), {});
}

array recv_like(const array& x, int src, std::optional<Group> group, StreamOrDevice s) {
  Group g = resolve(group);
  check_peer(g, src, "recv_like");
  return recv(x.shape(), x.dtype(), src, g, s);
}

}  // namespace mlx::core::distributed
