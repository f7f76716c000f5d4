// mx.distributed: process groups and their collectives (see mlx/distributed/distributed.h).
#include "mlx/distributed/distributed.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "python/src/bindings.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace mlx::core;
namespace dist = mlx::core::distributed;

namespace {

using Collective = array (*)(const array&, std::optional<dist::Group>, StreamOrDevice);

struct CollectiveDoc {
  const char* name;
  Collective fn;
  const char* doc;
};

const CollectiveDoc kCollectives[] = {
    {"all_sum", &dist::all_sum,
     "all_sum(x, *, group=None, stream=None)\n\nThe elementwise sum of ``x`` over every process "
     "of ``group`` (default: the global group). Every process receives the result.\n\n"
     "Args:\n    x (array): This process's contribution.\n    group (Group, optional): The "
     "processes taking part.\n\nReturns:\n    array: The sum, shaped like ``x``."},
    {"all_max", &dist::all_max,
     "all_max(x, *, group=None, stream=None)\n\nThe elementwise maximum of ``x`` over every "
     "process of ``group``; every process receives it.\n\nReturns:\n    array: Shaped like "
     "``x``."},
    {"all_min", &dist::all_min,
     "all_min(x, *, group=None, stream=None)\n\nThe elementwise minimum of ``x`` over every "
     "process of ``group``; every process receives it.\n\nReturns:\n    array: Shaped like "
     "``x``."},
    {"all_gather", &dist::all_gather,
     "all_gather(x, *, group=None, stream=None)\n\nThe ``x`` of every process of ``group``, "
     "concatenated along the first axis in rank order.\n\nReturns:\n    array: The first axis "
     "is ``group.size()`` times longer than ``x``'s."},
    {"sum_scatter", &dist::sum_scatter,
     "sum_scatter(x, *, group=None, stream=None)\n\nSums ``x`` over the processes of "
     "``group`` and splits the sum along the first axis: process ``r`` receives part ``r``.\n\n"
     "Returns:\n    array: The first axis is ``group.size()`` times shorter than ``x``'s."},
};

}  // namespace

void init_distributed(nb::module_& parent) {
  nb::module_ m = parent.def_submodule(
      "distributed",
      "Process groups and collective communication over the ring (TCP), MPI or NCCL backends. "
      "Without a configured backend every process is a group of one and the collectives "
      "return their input. A peer that dies or stays silent for MLX_DISTRIBUTED_TIMEOUT "
      "seconds (default 300) makes the evaluation raise RuntimeError on every other rank.");
  nb::class_<dist::Group>(m, "Group",
                          "A group of processes that communicate with each other. Obtain the "
                          "global one with :func:`init`.")
      .def("rank", &dist::Group::rank, "The rank of this process in the group, in [0, size).")
      .def("size", &dist::Group::size, "The number of processes in the group.")
      .def("split", &dist::Group::split, "color"_a, "key"_a = -1,
           "split(color, key=-1)\n\nSplits the group: processes passing the same ``color`` form "
           "a new group, ranked by ``key`` (default: their rank in this group).\n\nReturns:\n    "
           "Group: The group this process belongs to.")
      .def("__repr__", [](const dist::Group& g) {
        return "Group(rank=" + std::to_string(g.rank()) + ", size=" + std::to_string(g.size()) +
               ")";
      });
  m.def("is_available", &dist::is_available, "backend"_a = "any",
        "is_available(backend='any')\n\nWhether a communication backend can be used (``'any'``, "
        "``'mpi'``, ``'ring'``, ``'nccl'`` or ``'jaccl'``): the ring is built in, MPI and NCCL "
        "need their libraries (loaded at run time), jaccl does not exist here.");
  m.def(
      "init",
      [](bool strict, const std::string& backend, nb::object all_gather_factory) {
        (void)all_gather_factory;
        return dist::init(strict, backend);
      },
      "strict"_a = false, "backend"_a = "any", nb::kw_only(), "all_gather_factory"_a = nb::none(),
      "init(strict=False, backend='any', *, all_gather_factory=None)\n\nInitializes "
      "communication and returns the global group (later calls return the same group). "
      "``'any'`` uses the backend the environment configures (``mlx.launch`` or ``mpirun`` "
      "set it). When none is configured it returns the group of this process alone, or "
      "raises RuntimeError with ``strict=True``.\n\nArgs:\n    "
      "strict (bool): Raise instead of falling back to a group of one.\n    backend (str): "
      "``'any'`` tries every backend.\n\nReturns:\n    Group: The global group.");
  for (const auto& c : kCollectives) {
    m.def(
        c.name,
        [fn = c.fn](const array& x, std::optional<dist::Group> group, StreamOrDevice s) {
          return fn(x, group, s);
        },
        "x"_a, nb::kw_only(), "group"_a = nb::none(), "stream"_a = nb::none(), c.doc);
  }
  m.def(
      "send",
      [](const array& x, int dst, std::optional<dist::Group> group, StreamOrDevice s) {
        return dist::send(x, dst, group, s);
      },
      "x"_a, "dst"_a, nb::kw_only(), "group"_a = nb::none(), "stream"_a = nb::none(),
      "send(x, dst, *, group=None, stream=None)\n\nSends ``x`` to the process of rank ``dst``. "
      "Returns ``x``, so that later work can depend on the send. A group of one has no peer: "
      "ValueError.");
  m.def(
      "recv",
      [](const mlx::core::python::IntOrInts& shape, Dtype dtype, int src,
         std::optional<dist::Group> group, StreamOrDevice s) {
        return dist::recv(mlx::core::python::to_ints(shape), dtype, src, group, s);
      },
      "shape"_a, "dtype"_a, "src"_a, nb::kw_only(), "group"_a = nb::none(), "stream"_a = nb::none(),
      "recv(shape, dtype, src, *, group=None, stream=None)\n\nReceives an array of the given "
      "shape and dtype from the process of rank ``src``. A group of one has no peer: "
      "ValueError.");
  m.def(
      "recv_like",
      [](const array& x, int src, std::optional<dist::Group> group, StreamOrDevice s) {
        return dist::recv_like(x, src, group, s);
      },
      "x"_a, "src"_a, nb::kw_only(), "group"_a = nb::none(), "stream"_a = nb::none(),
      "recv_like(x, src, *, group=None, stream=None)\n\nReceives an array shaped and typed "
      "like ``x`` from the process of rank ``src``. A group of one has no peer: ValueError.");
}
