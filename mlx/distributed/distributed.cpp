#include "mlx/distributed/distributed.h"

#include <stdexcept>

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

// A collective whose result, over one process, is its input.
array over_one_process(const array& x, const std::optional<Group>& group) {
  (void)group.value_or(Group{});
  return x;
}

[[noreturn]] void no_peer(const char* op, int peer) {
  throw std::invalid_argument(msg("[", op, "] Rank ", peer,
                                  " is not a peer: the group has one process (no distributed "
                                  "backend is available), so there is no one to talk to."));
}

}  // namespace

Group Group::split(int color, int key) const {
  (void)color;
  (void)key;
  return Group{};
}

bool is_available(const std::string& backend) {
  check_backend(backend, "distributed.is_available");
  return false;
}

Group init(bool strict, const std::string& backend) {
  check_backend(backend, "distributed.init");
  if (strict) {
    throw std::runtime_error(msg("[distributed.init] Backend '", backend,
                                 "' is not available in this build (strict=True)."));
  }
  return Group{};
}

array all_sum(const array& x, std::optional<Group> group, StreamOrDevice) {
  return over_one_process(x, group);
}
array all_max(const array& x, std::optional<Group> group, StreamOrDevice) {
  return over_one_process(x, group);
}
array all_min(const array& x, std::optional<Group> group, StreamOrDevice) {
  return over_one_process(x, group);
}
array all_gather(const array& x, std::optional<Group> group, StreamOrDevice) {
  return over_one_process(x, group);
}
array sum_scatter(const array& x, std::optional<Group> group, StreamOrDevice) {
  return over_one_process(x, group);
}

array send(const array&, int dst, std::optional<Group>, StreamOrDevice) { no_peer("send", dst); }
array recv(Shape, Dtype, int src, std::optional<Group>, StreamOrDevice) { no_peer("recv", src); }
array recv_like(const array&, int src, std::optional<Group>, StreamOrDevice) {
  no_peer("recv_like", src);
}

}  // namespace mlx::core::distributed
