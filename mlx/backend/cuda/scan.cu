// Scan::eval_gpu over the [outer, n, inner] view of a dense input. Rows (inner == 1): one block
// per line scans tiles of 4 elements per thread, combining thread totals with warp shuffles and
// carrying the running total between tiles. Otherwise (or for short lines) one thread walks each
// line, neighbouring threads on neighbouring columns so that loads coalesce.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/reduce_ops.cuh"
#include "mlx/primitives/reduction.h"

namespace mlx::core {

namespace {

using namespace cu;

// log(exp(a) + exp(b)) without overflow; -inf is the identity.
struct LogAddExpOp {
  template <typename Acc>
  __device__ static Acc identity() {
    return -cuda::std::numeric_limits<Acc>::infinity();
  }
  template <typename Acc, typename In>
  __device__ static Acc load(In x) {
    return cast_to<Acc>(x);
  }
  template <typename Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    if (::isnan(a) || ::isnan(b)) {
      return a + b;
    }
    Acc hi = a > b ? a : b, lo = a > b ? b : a;
    if (::isinf(lo) && lo < 0 || ::isinf(hi) && hi > 0) {
      return hi;
    }
    return hi + ::log1p(::exp(lo - hi));
  }
};

constexpr int kItems = 4;
// Lines at most this long are scanned by one thread each.
constexpr int64_t kShortLine = 16;

template <typename Op, typename In, typename Out>
__global__ void scan_rows(const In* in, Out* out, int64_t n, bool reverse, bool inclusive) {
  using Acc = compute_t<Out>;
  __shared__ Acc warp_totals[32];
  const Op op;
  const In* x = in + int64_t(blockIdx.x) * n;
  Out* y = out + int64_t(blockIdx.x) * n;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  auto at = [&](int64_t k) { return reverse ? n - 1 - k : k; };
  Acc carry = Op::template identity<Acc>();
  for (int64_t tile = 0; tile < n; tile += int64_t(blockDim.x) * kItems) {
    const int64_t first = tile + int64_t(threadIdx.x) * kItems;
    Acc v[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      v[j] =
          first + j < n ? Op::template load<Acc>(x[at(first + j)]) : Op::template identity<Acc>();
      if (j > 0) {
        v[j] = op(v[j - 1], v[j]);
      }
    }
    // Inclusive scan of the thread totals within the warp, then of the warp totals.
    Acc w = v[kItems - 1];
    for (int o = 1; o < 32; o *= 2) {
      Acc u = shfl_up(w, o);
      if (lane >= o) {
        w = op(u, w);
      }
    }
    Acc before_in_warp = shfl_up(w, 1);
    if (lane == 31) {
      warp_totals[warp] = w;
    }
    __syncthreads();
    if (warp == 0) {
      Acc t = lane < warps ? warp_totals[lane] : Op::template identity<Acc>();
      for (int o = 1; o < 32; o *= 2) {
        Acc u = shfl_up(t, o);
        if (lane >= o) {
          t = op(u, t);
        }
      }
      warp_totals[lane] = t;
    }
    __syncthreads();
    Acc prefix = carry;
    if (warp > 0) {
      prefix = op(prefix, warp_totals[warp - 1]);
    }
    if (lane > 0) {
      prefix = op(prefix, before_in_warp);
    }
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (first + j < n) {
        Acc r = inclusive ? op(prefix, v[j]) : (j == 0 ? prefix : op(prefix, v[j - 1]));
        y[at(first + j)] = cast_to<Out>(r);
      }
    }
    carry = op(carry, warp_totals[warps - 1]);
    __syncthreads();  // warp_totals is rewritten by the next tile
  }
}

template <typename Op, typename In, typename Out>
__global__ void scan_lines(const In* in, Out* out, int64_t outer, int64_t n, int64_t inner,
                           bool reverse, bool inclusive) {
  using Acc = compute_t<Out>;
  const Op op;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < outer * inner;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (c / inner) * n * inner + c % inner;
    Acc acc = Op::template identity<Acc>();
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = base + (reverse ? n - 1 - j : j) * inner;
      Acc v = Op::template load<Acc>(in[i]);
      if (inclusive) {
        acc = op(acc, v);
        out[i] = cast_to<Out>(acc);
      } else {
        out[i] = cast_to<Out>(acc);
        acc = op(acc, v);
      }
    }
  }
}

template <typename Op, typename In, typename Out>
void scan_gpu(const array& in_, array& out, int axis, bool reverse, bool inclusive) {
  array in = dense_copy(in_);
  // Each element is read before it is written, by the same thread.
  if (in.is_donatable() && in.dtype() == out.dtype()) {
    out.copy_shared_buffer(in);
  } else {
    cu::allocate(out);
  }
  if (out.size() == 0) {
    return;
  }
  int64_t n = in.shape(axis), outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) {
    outer *= in.shape(d);
  }
  for (int d = axis + 1; d < in.ndim(); ++d) {
    inner *= in.shape(d);
  }
  const In* x = in.gpu_data<In>();
  Out* y = out.gpu_data<Out>();
  if (inner == 1 && n > kShortLine) {
    int threads = 32;
    while (threads < 256 && int64_t(threads) * kItems < n) {
      threads *= 2;
    }
    scan_rows<Op, In, Out>
        <<<static_cast<unsigned>(outer), threads, 0, stream()>>>(x, y, n, reverse, inclusive);
  } else {
    scan_lines<Op, In, Out><<<blocks_for(outer * inner), kThreads, 0, stream()>>>(
        x, y, outer, n, inner, reverse, inclusive);
  }
  check_launch("scan");
}

}  // namespace

void Scan::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  auto run = [&]<typename Op>() {
    dispatch_all<DeviceTypes>(in.dtype(), name(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        // A cumulative sum of booleans counts in int32 (as MLX); other bool scans stay bool.
        if (out.dtype() == int32) {
          return scan_gpu<Op, bool, int32_t>(in, out, axis_, reverse_, inclusive_);
        }
      }
      scan_gpu<Op, T, T>(in, out, axis_, reverse_, inclusive_);
    });
  };
  switch (type_) {
    case Sum:
      return run.template operator()<red::Sum>();
    case Prod:
      return run.template operator()<red::Prod>();
    case Max:
      return run.template operator()<red::Max>();
    case Min:
      return run.template operator()<red::Min>();
    case LogAddExp:
      dispatch_float<DeviceTypes>(in.dtype(), name(), [&]<typename T>() {
        scan_gpu<LogAddExpOp, T, T>(in, out, axis_, reverse_, inclusive_);
      });
      return;
  }
}

}  // namespace mlx::core
