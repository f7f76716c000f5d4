// The NCCL backend, loaded at run time: libnccl (MLX_NCCL_LIBNAME, else libnccl.so.2) and the
// CUDA runtime (MLX_CUDART_LIBNAME, else libcudart.so.13 / .12 / libcudart.so: the one a CUDA build
// links comes first) are dlopen'ed, so it compiles and links without CUDA. Ranks find each other
// through the ring backend's hostfile (MLX_HOSTFILE, MLX_RANK, set by mlx.launch --backend nccl):
// rank 0's ncclUniqueId travels over it. Rank r uses GPU r % (GPUs of its host).
//
// Buffers are device memory, enqueued on the CUDA stream the GPU backend hands over with
// set_device_stream (its kernels for the distributed primitives do so; see on_device()).
// Timeout: the call polls the stream and ncclCommGetAsyncError until the work is done or
// MLX_DISTRIBUTED_TIMEOUT passes, then aborts the communicator (ncclCommAbort) and throws.
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "mlx/backend/common/dynamic_library.h"
#include "mlx/distributed/communicator.h"
#include "mlx/utils.h"

namespace mlx::core::distributed::detail {

namespace {

using Comm = void*;    // ncclComm_t
using Stream = void*;  // cudaStream_t
struct UniqueId {
  char internal[128];
};
enum NcclType { kInt8 = 0, kUint8, kInt32, kUint32, kInt64, kUint64, kF16, kF32, kF64, kBF16 };
enum NcclOp { kSum = 0, kProd, kMax, kMin };
constexpr int kCudaSuccess = 0, kCudaNotReady = 600;

struct Api {
  DynamicLibrary nccl{"MLX_NCCL_LIBNAME", {"libnccl.so.2", "libnccl.so"}, RTLD_NOW | RTLD_LOCAL};
  DynamicLibrary cudart{"MLX_CUDART_LIBNAME",
                        {"libcudart.so.13", "libcudart.so.12", "libcudart.so"},
                        RTLD_NOW | RTLD_LOCAL};
  int (*GetUniqueId)(UniqueId*);
  int (*CommInitRank)(Comm*, int, UniqueId, int);
  int (*CommSplit)(Comm, int, int, Comm*, void*);
  int (*CommGetAsyncError)(Comm, int*);
  int (*CommAbort)(Comm);
  const char* (*GetErrorString)(int);
  int (*AllReduce)(const void*, void*, size_t, int, int, Comm, Stream);
  int (*AllGather)(const void*, void*, size_t, int, Comm, Stream);
  int (*ReduceScatter)(const void*, void*, size_t, int, int, Comm, Stream);
  int (*Send)(const void*, size_t, int, int, Comm, Stream);
  int (*Recv)(void*, size_t, int, int, Comm, Stream);
  int (*SetDevice)(int);
  int (*GetDeviceCount)(int*);
  int (*StreamQuery)(Stream);

  Api() {
    nccl.sym(GetUniqueId, "ncclGetUniqueId");
    nccl.sym(CommInitRank, "ncclCommInitRank");
    nccl.sym(CommGetAsyncError, "ncclCommGetAsyncError");
    nccl.sym(CommAbort, "ncclCommAbort");
    nccl.sym(GetErrorString, "ncclGetErrorString");
    nccl.sym(AllReduce, "ncclAllReduce");
    nccl.sym(AllGather, "ncclAllGather");
    nccl.sym(ReduceScatter, "ncclReduceScatter");
    nccl.sym(Send, "ncclSend");
    nccl.sym(Recv, "ncclRecv");
    cudart.sym(SetDevice, "cudaSetDevice");
    cudart.sym(GetDeviceCount, "cudaGetDeviceCount");
    cudart.sym(StreamQuery, "cudaStreamQuery");
    CommSplit = reinterpret_cast<decltype(CommSplit)>(nccl.address("ncclCommSplit"));  // 2.18+
  }
  bool ok() const { return nccl.ok() && cudart.ok(); }
  const std::string& error() const { return nccl.ok() ? cudart.error : nccl.error; }
};

Api& api() {
  static Api a;
  return a;
}

// NCCL's type for a dtype and reduction; `count` is adjusted where a dtype travels as
// another (complex64 as two float32, bool as uint8 whose max is or).
int nccl_type(Dtype dtype, ReduceOp op, size_t& count, int& nccl_op, const char* what) {
  nccl_op = op == ReduceOp::sum ? kSum : op == ReduceOp::max ? kMax : kMin;
  switch (dtype.val) {
    case Dtype::Val::bool_:
      if (op == ReduceOp::sum)
        nccl_op = kMax;
      return kUint8;
    case Dtype::Val::uint8:
      return kUint8;
    case Dtype::Val::int8:
      return kInt8;
    case Dtype::Val::int32:
      return kInt32;
    case Dtype::Val::uint32:
      return kUint32;
    case Dtype::Val::int64:
      return kInt64;
    case Dtype::Val::uint64:
      return kUint64;
    case Dtype::Val::float16:
      return kF16;
    case Dtype::Val::bfloat16:
      return kBF16;
    case Dtype::Val::float32:
      return kF32;
    case Dtype::Val::float64:
      return kF64;
    case Dtype::Val::complex64:
      if (op == ReduceOp::sum) {
        count *= 2;
        return kF32;
      }
      break;
    default:
      break;
  }
  throw std::invalid_argument(msg("[distributed] nccl: ", what, " does not support ",
                                  dtype_name(dtype), " (NCCL has no such reduction)."));
}

class Nccl final : public Communicator {
 public:
  Nccl(Comm comm, int rank, int size, std::shared_ptr<Communicator> bootstrap)
      : comm_(comm), rank_(rank), size_(size), bootstrap_(std::move(bootstrap)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "nccl"; }
  bool on_device() const override { return true; }
  void set_device_stream(void* stream) override { stream_ = stream; }

  void all_reduce(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) override {
    int nop = 0;
    int t = nccl_type(dtype, op, count, nop, "all_reduce");
    run("all_reduce", [&] { return api().AllReduce(in, out, count, t, nop, comm_, stream_); });
  }
  void all_gather(const void* in, void* out, size_t bytes) override {
    run("all_gather", [&] { return api().AllGather(in, out, bytes, kUint8, comm_, stream_); });
  }
  void reduce_scatter(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) override {
    int nop = 0;
    int t = nccl_type(dtype, op, count, nop, "sum_scatter");
    run("sum_scatter", [&] { return api().ReduceScatter(in, out, count, t, nop, comm_, stream_); });
  }
  void send(const void* data, size_t bytes, int dst) override {
    run("send", [&] { return api().Send(data, bytes, kUint8, dst, comm_, stream_); });
  }
  void recv(void* data, size_t bytes, int src) override {
    run("recv", [&] { return api().Recv(data, bytes, kUint8, src, comm_, stream_); });
  }
  std::shared_ptr<Communicator> split(int color, int key) override {
    if (api().CommSplit == nullptr) {
      throw std::runtime_error("[distributed] nccl: Group.split needs NCCL 2.18 or newer.");
    }
    Comm sub = nullptr;
    check(api().CommSplit(comm_, color, key < 0 ? rank_ : key, &sub, nullptr), "ncclCommSplit");
    auto boot = bootstrap_->split(color, key);
    return std::make_shared<Nccl>(sub, boot->rank(), boot->size(), boot);
  }

 private:
  void check(int rc, const char* call) {
    if (rc != 0) {
      throw std::runtime_error(
          msg("[distributed] nccl: ", call, " failed: ", api().GetErrorString(rc), "."));
    }
  }

  // Enqueues, then waits for the stream with the timeout (a host wait: see the header).
  template <typename Enqueue>
  void run(const char* what, Enqueue enqueue) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.empty()) {
      throw std::runtime_error(
          msg("[distributed] nccl: ", what, " on a group that an earlier error broke: ", failure_));
    }
    check(enqueue(), what);
    const double timeout = timeout_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    while (true) {
      int rc = api().StreamQuery(stream_);
      if (rc == kCudaSuccess)
        return;
      int async = 0;
      api().CommGetAsyncError(comm_, &async);
      double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if ((rc != kCudaNotReady) || async != 0 || waited > timeout) {
        failure_ = async != 0 ? msg(what, " failed: ", api().GetErrorString(async))
                   : rc != kCudaNotReady
                       ? msg(what, " failed: CUDA error ", rc)
                       : msg(what, " timed out after ", timeout,
                             " s (MLX_DISTRIBUTED_TIMEOUT). A peer died or stopped answering.");
        api().CommAbort(comm_);
        throw std::runtime_error(msg("[distributed] nccl: rank ", rank_, ": ", failure_));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  Comm comm_;
  int rank_, size_;
  std::shared_ptr<Communicator> bootstrap_;  // the ring that carried the unique id
  Stream stream_ = nullptr;                  // the legacy default stream until one is set
  std::mutex mutex_;
  std::string failure_;
};

}  // namespace

bool nccl_available() { return api().ok(); }

std::shared_ptr<Communicator> nccl_init(bool strict) {
  Api& a = api();
  if (!a.ok()) {
    if (strict) {
      throw std::runtime_error(msg("[distributed.init] The NCCL backend is not available: ",
                                   a.error(), ". Install NCCL (or set MLX_NCCL_LIBNAME)."));
    }
    return nullptr;
  }
  auto boot = ring_init(strict);
  if (boot == nullptr)
    return nullptr;
  int devices = 0;
  if (a.GetDeviceCount(&devices) != kCudaSuccess || devices == 0) {
    if (strict)
      throw std::runtime_error("[distributed.init] nccl: no CUDA device is visible.");
    return nullptr;
  }
  a.SetDevice(boot->rank() % devices);
  UniqueId id{};
  if (boot->rank() == 0 && a.GetUniqueId(&id) != 0) {
    throw std::runtime_error("[distributed.init] nccl: ncclGetUniqueId failed.");
  }
  std::vector<UniqueId> ids(boot->size());
  boot->all_gather(&id, ids.data(), sizeof(id));
  Comm comm = nullptr;
  int rc = a.CommInitRank(&comm, boot->size(), ids[0], boot->rank());
  if (rc != 0) {
    throw std::runtime_error(
        msg("[distributed.init] nccl: ncclCommInitRank failed: ", a.GetErrorString(rc), "."));
  }
  return std::make_shared<Nccl>(comm, boot->rank(), boot->size(), boot);
}

}  // namespace mlx::core::distributed::detail
