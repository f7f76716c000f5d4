// The MPI backend, loaded at run time: libmpi is dlopen'ed (MLX_MPI_LIBNAME, else OpenMPI's
// libmpi.so.40 / libmpi.so), so the library has no link dependency on MPI. The declarations
// below are OpenMPI's ABI (handles are pointers to its predefined objects, found by name);
// MPICH's integer handles are not supported.
//
// Every dtype travels as a contiguous MPI type of its item size and reduces with our own
// kernels (MPI user ops), so float16, bfloat16, bool and complex work like the others.
//
// Timeout: every call is the non-blocking form (MPI_Iallreduce, ...) polled with MPI_Test
// until it completes or MLX_DISTRIBUTED_TIMEOUT passes, then a runtime_error: MPI cannot
// cancel a collective, so the group is unusable afterwards, and the process is expected to
// exit (mpirun then stops the others).
#include <dlfcn.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "mlx/backend/common/dynamic_library.h"
#include "mlx/distributed/communicator.h"
#include "mlx/utils.h"

namespace mlx::core::distributed::detail {

namespace {

using Handle = void*;  // MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request: pointers in OpenMPI
using UserFn = void (*)(void*, void*, int*, Handle*);
constexpr int kThreadMultiple = 3;
void* const kInPlace = reinterpret_cast<void*>(1);  // MPI_IN_PLACE
void* const kStatusIgnore = nullptr;                // MPI_STATUS_IGNORE

// Global: OpenMPI's plugins resolve their symbols against libmpi.
struct Api : DynamicLibrary {
  int (*Initialized)(int*);
  int (*Init_thread)(int*, char***, int, int*);
  int (*Finalize)();
  int (*Finalized)(int*);
  int (*Comm_rank)(Handle, int*);
  int (*Comm_size)(Handle, int*);
  int (*Comm_split)(Handle, int, int, Handle*);
  int (*Type_contiguous)(int, Handle, Handle*);
  int (*Type_commit)(Handle*);
  int (*Op_create)(UserFn, int, Handle*);
  int (*Iallreduce)(const void*, void*, int, Handle, Handle, Handle, Handle*);
  int (*Iallgather)(const void*, int, Handle, void*, int, Handle, Handle, Handle*);
  int (*Ireduce_scatter_block)(const void*, void*, int, Handle, Handle, Handle, Handle*);
  int (*Isend)(const void*, int, Handle, int, int, Handle, Handle*);
  int (*Irecv)(void*, int, Handle, int, int, Handle, Handle*);
  int (*Test)(Handle*, int*, void*);
  Handle comm_world = nullptr;
  Handle byte = nullptr;

  Api() : DynamicLibrary("MLX_MPI_LIBNAME", {"libmpi.so.40", "libmpi.so"}, RTLD_NOW | RTLD_GLOBAL) {
    if (handle == nullptr)
      return;
    sym(Initialized, "MPI_Initialized");
    sym(Init_thread, "MPI_Init_thread");
    sym(Finalize, "MPI_Finalize");
    sym(Finalized, "MPI_Finalized");
    sym(Comm_rank, "MPI_Comm_rank");
    sym(Comm_size, "MPI_Comm_size");
    sym(Comm_split, "MPI_Comm_split");
    sym(Type_contiguous, "MPI_Type_contiguous");
    sym(Type_commit, "MPI_Type_commit");
    sym(Op_create, "MPI_Op_create");
    sym(Iallreduce, "MPI_Iallreduce");
    sym(Iallgather, "MPI_Iallgather");
    sym(Ireduce_scatter_block, "MPI_Ireduce_scatter_block");
    sym(Isend, "MPI_Isend");
    sym(Irecv, "MPI_Irecv");
    sym(Test, "MPI_Test");
    comm_world = address("ompi_mpi_comm_world");
    byte = address("ompi_mpi_byte");
    if (error.empty() && (comm_world == nullptr || byte == nullptr)) {
      error = "not OpenMPI (ompi_mpi_comm_world is missing)";
    }
  }
};

Api& api() {
  static Api a;
  return a;
}

// Set when a call timed out: MPI_Finalize would wait for the peers forever, so the exit skips
// it (mpirun then reports the failed rank and stops the job).
std::atomic<bool>& broken() {
  static std::atomic<bool> b{false};
  return b;
}

void check(int rc, const char* call) {
  if (rc != 0) {
    throw std::runtime_error(msg("[distributed] mpi: ", call, " failed with error code ", rc, "."));
  }
}

// Every dtype, in the order of Dtype::Val.
constexpr Dtype kDtypeOf[] = {bool_, uint8, uint16,  uint32,  uint64,  int8,     int16,
                              int32, int64, float16, float32, float64, bfloat16, complex64};
constexpr int kDtypes = sizeof(kDtypeOf) / sizeof(kDtypeOf[0]);
constexpr int kOps = 3;

// An MPI user op per (reduction, dtype): a function pointer cannot capture, so each is its
// own instantiation.
template <int D, int O>
void user_op(void* in, void* inout, int* len, Handle*) {
  reduce_into(inout, in, static_cast<size_t>(*len), kDtypeOf[D], static_cast<ReduceOp>(O));
}

template <int... Ds>
struct OpTable {
  template <int O>
  static constexpr std::array<UserFn, sizeof...(Ds)> row() {
    return {&user_op<Ds, O>...};
  }
};

// OpenMPI's own types (null: none fits) in the order of Dtype::Val; its reductions on them
// are faster than a user op. Floating max / min stay user ops, whose NaN propagation matches
// the ring backend's.
constexpr const char* kBuiltinType[] = {nullptr,
                                        "ompi_mpi_uint8_t",
                                        "ompi_mpi_uint16_t",
                                        "ompi_mpi_uint32_t",
                                        "ompi_mpi_uint64_t",
                                        "ompi_mpi_int8_t",
                                        "ompi_mpi_int16_t",
                                        "ompi_mpi_int32_t",
                                        "ompi_mpi_int64_t",
                                        nullptr,
                                        "ompi_mpi_float",
                                        "ompi_mpi_double",
                                        nullptr,
                                        "ompi_mpi_c_float_complex"};
constexpr const char* kBuiltinOp[] = {"ompi_mpi_op_sum", "ompi_mpi_op_max", "ompi_mpi_op_min"};

// Types and ops, created once after MPI_Init: per (reduction, dtype) the MPI type and op.
struct Types {
  Handle type[kOps][kDtypes] = {};
  Handle op[kOps][kDtypes] = {};
  Types() {
    using T = OpTable<0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13>;
    const std::array<std::array<UserFn, kDtypes>, kOps> fns = {T::row<0>(), T::row<1>(),
                                                               T::row<2>()};
    for (int d = 0; d < kDtypes; ++d) {
      Handle bytes = nullptr;
      int item = static_cast<int>(size_of(kDtypeOf[d]));
      check(api().Type_contiguous(item, api().byte, &bytes), "MPI_Type_contiguous");
      check(api().Type_commit(&bytes), "MPI_Type_commit");
      Handle builtin = kBuiltinType[d] ? api().address(kBuiltinType[d]) : nullptr;
      for (int o = 0; o < kOps; ++o) {
        bool floating = is_inexact(kDtypeOf[d]);
        if (builtin != nullptr && (o == 0 || !floating)) {
          type[o][d] = builtin;
          op[o][d] = api().address(kBuiltinOp[o]);
        }
        if (builtin == nullptr || op[o][d] == nullptr || (o != 0 && floating)) {
          type[o][d] = bytes;
          check(api().Op_create(fns[o][d], 1, &op[o][d]), "MPI_Op_create");
        }
      }
    }
  }
};

class Mpi final : public Communicator {
 public:
  Mpi(Handle comm, std::shared_ptr<Types> types, std::shared_ptr<std::mutex> mutex)
      : comm_(comm), types_(std::move(types)), mutex_(std::move(mutex)) {
    check(api().Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(api().Comm_size(comm_, &size_), "MPI_Comm_size");
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "mpi"; }

  void all_reduce(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) override {
    run("all_reduce", [&](Handle* req) {
      return api().Iallreduce(in == out ? kInPlace : in, out, as_int(count, "all_reduce"),
                              type(dtype, op), this->op(dtype, op), comm_, req);
    });
  }
  void all_gather(const void* in, void* out, size_t bytes) override {
    int n = as_int(bytes, "all_gather");
    run("all_gather", [&](Handle* req) {
      return api().Iallgather(in, n, api().byte, out, n, api().byte, comm_, req);
    });
  }
  void reduce_scatter(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) override {
    run("sum_scatter", [&](Handle* req) {
      return api().Ireduce_scatter_block(in, out, as_int(count, "sum_scatter"), type(dtype, op),
                                         this->op(dtype, op), comm_, req);
    });
  }
  void send(const void* data, size_t bytes, int dst) override {
    run("send", [&](Handle* req) {
      return api().Isend(data, as_int(bytes, "send"), api().byte, dst, 0, comm_, req);
    });
  }
  void recv(void* data, size_t bytes, int src) override {
    run("recv", [&](Handle* req) {
      return api().Irecv(data, as_int(bytes, "recv"), api().byte, src, 0, comm_, req);
    });
  }
  std::shared_ptr<Communicator> split(int color, int key) override {
    std::lock_guard<std::mutex> lock(*mutex_);
    check_usable("split");
    Handle sub = nullptr;
    check(api().Comm_split(comm_, color, key < 0 ? rank_ : key, &sub), "MPI_Comm_split");
    return std::make_shared<Mpi>(sub, types_, mutex_);
  }

 private:
  Handle type(Dtype d, ReduceOp o) const {
    return types_->type[static_cast<int>(o)][static_cast<int>(d.val)];
  }
  Handle op(Dtype d, ReduceOp o) const {
    return types_->op[static_cast<int>(o)][static_cast<int>(d.val)];
  }
  static int as_int(size_t n, const char* op) {
    if (n > static_cast<size_t>(INT32_MAX)) {
      throw std::invalid_argument(
          msg("[distributed] mpi: ", op, " of ", n, " elements exceeds MPI's int count."));
    }
    return static_cast<int>(n);
  }
  void check_usable(const char* op) const {
    if (!failure_.empty()) {
      throw std::runtime_error(
          msg("[distributed] mpi: ", op, " on a group that an earlier error broke: ", failure_));
    }
  }

  // Starts the non-blocking call and polls it: spinning first (small messages finish in
  // microseconds), then yielding, then sleeping briefly, until the timeout.
  template <typename Start>
  void run(const char* what, Start start) {
    std::lock_guard<std::mutex> lock(*mutex_);
    check_usable(what);
    Handle req = nullptr;
    check(start(&req), what);
    const double timeout = timeout_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    for (long spins = 0;; ++spins) {
      int done = 0;
      check(api().Test(&req, &done, kStatusIgnore), "MPI_Test");
      if (done)
        return;
      auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (waited > timeout) {
        broken() = true;
        failure_ = msg("[distributed] mpi: rank ", rank_, ": ", what, " timed out after ", timeout,
                       " s (MLX_DISTRIBUTED_TIMEOUT). A peer died or stopped answering.");
        throw std::runtime_error(failure_);
      }
      if (spins > 2000000) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      } else if (spins > 1000) {
        sched_yield();
      }
    }
  }

  Handle comm_;
  std::shared_ptr<Types> types_;
  std::shared_ptr<std::mutex> mutex_;  // MPI is entered by one thread at a time
  int rank_ = 0, size_ = 1;
  std::string failure_;
};

}  // namespace

bool mpi_available() { return api().ok(); }

std::shared_ptr<Communicator> mpi_init(bool strict) {
  Api& a = api();
  if (!a.ok()) {
    if (strict) {
      throw std::runtime_error(msg("[distributed.init] The MPI backend is not available: ", a.error,
                                   ". Install OpenMPI (libopenmpi-dev) or set MLX_MPI_LIBNAME."));
    }
    return nullptr;
  }
  int initialized = 0;
  check(a.Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    int provided = 0;
    check(a.Init_thread(nullptr, nullptr, kThreadMultiple, &provided), "MPI_Init_thread");
    // Finalized at exit so that mpirun sees a clean end.
    std::atexit([] {
      int finalized = 1;
      if (!broken() && api().Finalized(&finalized) == 0 && !finalized)
        api().Finalize();
    });
  }
  return std::make_shared<Mpi>(a.comm_world, std::make_shared<Types>(),
                               std::make_shared<std::mutex>());
}

}  // namespace mlx::core::distributed::detail
