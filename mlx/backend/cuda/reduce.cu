// Reduce::eval_gpu over the layout of backend/common/reduce_plan.h: every output folds R
// reduced elements. Reduced dimensions that are innermost in memory ("rows") give each output
// a block; otherwise ("columns") 32 neighbouring outputs share a block and read coalesced. Long
// reductions are split across blocks into partial results, folded by a second pass.
#include "mlx/backend/common/reduce_plan.h"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/occupancy.cuh"
#include "mlx/backend/cuda/reduce_ops.cuh"
#include "mlx/primitives/reduction.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace cu;

struct ReduceParams {
  int kdim, rdim;
  int32_t kshape[kMaxDims], rshape[kMaxDims];
  int64_t kin[kMaxDims], kout[kMaxDims], rin[kMaxDims];
  int64_t R, K;
};

__device__ __forceinline__ int64_t offset_of(int64_t i, int nd, const int32_t* shape,
                                             const int64_t* strides) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; --d) {
    int64_t q = i / shape[d];
    off += (i - q * shape[d]) * strides[d];
    i = q;
  }
  return off;
}

// Four neighbouring elements, loaded at once when aligned.
constexpr int kColumns = 4;

template <typename In>
struct alignas(sizeof(In) * kColumns) ColumnVec {
  In v[kColumns];
};

// One block per output (blockIdx.x) and per slice of the reduction (blockIdx.y). A dense slice
// is read with aligned vector loads between a scalar head and tail.
template <typename Op, typename In, typename Acc, typename Out>
__global__ void reduce_rows(const In* in, Out* out, Acc* partial, ReduceParams p, int64_t chunk) {
  __shared__ Acc shared[32];
  const int64_t k = blockIdx.x;
  const int64_t base = offset_of(k, p.kdim, p.kshape, p.kin);
  const int64_t r0 = blockIdx.y * chunk, r1 = min(p.R, r0 + chunk);
  Acc v = Op::template identity<Acc>();
  if (p.rdim == 1 && p.rin[0] == 1) {
    const In* x = in + base;
    const int64_t lag = (reinterpret_cast<uintptr_t>(x + r0) / sizeof(In)) % kColumns;
    const int64_t head = min(r1, r0 + (lag ? kColumns - lag : 0));
    const int64_t vecs = (r1 - head) / kColumns;
    const auto* body = reinterpret_cast<const ColumnVec<In>*>(x + head);
    for (int64_t r = r0 + threadIdx.x; r < head; r += blockDim.x) {
      v = Op{}(v, Op::template load<Acc>(x[r]));
    }
#pragma unroll 4  // loads in flight: a row is one block's only work
    for (int64_t i = threadIdx.x; i < vecs; i += blockDim.x) {
      ColumnVec<In> q = body[i];
#pragma unroll
      for (int j = 0; j < kColumns; ++j) {
        v = Op{}(v, Op::template load<Acc>(q.v[j]));
      }
    }
    for (int64_t r = head + vecs * kColumns + threadIdx.x; r < r1; r += blockDim.x) {
      v = Op{}(v, Op::template load<Acc>(x[r]));
    }
  } else {
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) {
      v = Op{}(v, Op::template load<Acc>(in[base + offset_of(r, p.rdim, p.rshape, p.rin)]));
    }
  }
  v = block_reduce<Op>(v, shared);  // every thread has the result; thread 0 writes it
  if (threadIdx.x == 0) {
    if (partial != nullptr) {
      partial[blockIdx.y * p.K + k] = v;
    } else {
      out[offset_of(k, p.kdim, p.kshape, p.kout)] = cast_to<Out>(v);
    }
  }
}

// Lanes of the reduction per column block: 32 x 16 threads, so that enough rows are in flight
// to reach the memory's bandwidth when there are few column blocks (a [16384, 4096] column sum
// has 32 of them per split), and 16 lanes' partial results to fold at the end.
constexpr int kColumnLanes = 16;

// Blocks of 32 threads x kColumnLanes lanes of the reduction; each thread folds kColumns
// neighbouring outputs, with one vector load per row when they are adjacent in memory
// (`vector`), so that a warp reads 512 contiguous bytes of fp32 per row instead of 128.
template <typename Op, typename In, typename Acc, typename Out>
__global__ void reduce_columns(const In* in, Out* out, Acc* partial, ReduceParams p, int64_t chunk,
                               bool vector) {
  __shared__ Acc shared[kColumnLanes][32 * kColumns + 1];
  const int64_t k0 = (int64_t(blockIdx.x) * 32 + threadIdx.x) * kColumns;
  const int64_t r0 = blockIdx.y * chunk, r1 = min(p.R, r0 + chunk);
  Acc v[kColumns];
  int64_t base[kColumns];
#pragma unroll
  for (int j = 0; j < kColumns; ++j) {
    v[j] = Op::template identity<Acc>();
    base[j] = k0 + j < p.K ? offset_of(k0 + j, p.kdim, p.kshape, p.kin) : -1;
  }
  auto row_offset = [&](int64_t r) {
    return p.rdim == 1 ? r * p.rin[0] : offset_of(r, p.rdim, p.rshape, p.rin);
  };
  if (vector) {
    if (base[0] >= 0) {  // all of a thread's outputs exist, or none
#pragma unroll 8         // independent loads in flight
      for (int64_t r = r0 + threadIdx.y; r < r1; r += kColumnLanes) {
        ColumnVec<In> x = *reinterpret_cast<const ColumnVec<In>*>(in + base[0] + row_offset(r));
#pragma unroll
        for (int j = 0; j < kColumns; ++j) {
          v[j] = Op{}(v[j], Op::template load<Acc>(x.v[j]));
        }
      }
    }
  } else {
#pragma unroll 4
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColumnLanes) {
      const int64_t roff = row_offset(r);
#pragma unroll
      for (int j = 0; j < kColumns; ++j) {
        if (base[j] >= 0) {
          v[j] = Op{}(v[j], Op::template load<Acc>(in[base[j] + roff]));
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kColumns; ++j) {
    shared[threadIdx.y][threadIdx.x * kColumns + j] = v[j];
  }
  __syncthreads();
  if (threadIdx.y == 0) {
#pragma unroll
    for (int j = 0; j < kColumns; ++j) {
      const int64_t k = k0 + j;
      if (k >= p.K) {
        break;
      }
      Acc t = v[j];
      for (int y = 1; y < kColumnLanes; ++y) {
        t = Op{}(t, shared[y][threadIdx.x * kColumns + j]);
      }
      if (partial != nullptr) {
        partial[blockIdx.y * p.K + k] = t;
      } else {
        out[offset_of(k, p.kdim, p.kshape, p.kout)] = cast_to<Out>(t);
      }
    }
  }
}

// Whether reduce_columns may read each thread's outputs with one aligned vector load per row:
// they are adjacent in memory and every row offset keeps the alignment.
template <typename In>
bool columns_vectorize(const ReduceParams& p, const In* src) {
  if (p.kdim == 0 || p.kin[p.kdim - 1] != 1 || p.kshape[p.kdim - 1] % kColumns != 0 ||
      reinterpret_cast<uintptr_t>(src) % sizeof(ColumnVec<In>) != 0) {
    return false;
  }
  for (int d = 0; d < p.kdim; ++d) {
    if (p.kin[d] % kColumns != 0 && d != p.kdim - 1) {
      return false;
    }
  }
  for (int d = 0; d < p.rdim; ++d) {
    if (p.rin[d] % kColumns != 0) {
      return false;
    }
  }
  return true;
}

// Folds the partial results of `splits` slices: partial is [splits, K].
template <typename Op, typename Acc, typename Out>
__global__ void reduce_partials(const Acc* partial, Out* out, ReduceParams p, int64_t splits) {
  const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= p.K) {
    return;
  }
  Acc v = partial[k];
  for (int64_t s = 1; s < splits; ++s) {
    v = Op{}(v, partial[s * p.K + k]);
  }
  out[offset_of(k, p.kdim, p.kshape, p.kout)] = cast_to<Out>(v);
}

ReduceParams make_reduce_params(const ReducePlan& plan) {
  if (plan.kshape.size() > size_t(kMaxDims) || plan.rshape.size() > size_t(kMaxDims)) {
    throw std::invalid_argument("[reduce] Too many non-contiguous dimensions for the GPU.");
  }
  ReduceParams p{};
  p.kdim = static_cast<int>(plan.kshape.size());
  p.rdim = static_cast<int>(plan.rshape.size());
  for (int d = 0; d < p.kdim; ++d) {
    p.kshape[d] = plan.kshape[d];
    p.kin[d] = plan.kin[d];
    p.kout[d] = plan.kout[d];
  }
  for (int d = 0; d < p.rdim; ++d) {
    p.rshape[d] = plan.rshape[d];
    p.rin[d] = plan.rin[d];
  }
  p.K = reduce_plan_size(plan.kshape);
  p.R = reduce_plan_size(plan.rshape);
  return p;
}

template <typename Op, typename In, typename Acc, typename Out>
void reduce_gpu(const array& in, array& out, const std::vector<int>& axes) {
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  ReducePlan plan = make_reduce_plan(in, out, axes);
  ReduceParams p = make_reduce_params(plan);
  const In* src = in.gpu_data<In>() + plan.in_offset;
  Out* dst = out.gpu_data<Out>() + plan.out_offset;
  const bool rows = p.rdim > 0 && p.rin[p.rdim - 1] == 1;
  const int64_t outputs_per_block = rows ? 1 : 32 * kColumns;
  const int64_t blocks = (p.K + outputs_per_block - 1) / outputs_per_block;
  // Few outputs of long reductions: split the reduction so that the blocks fill the GPU once.
  // Not more: a second, mostly empty wave made column sums of [16384, 16384] 25% slower.
  const int64_t wave = rows
                           ? resident_blocks<reduce_rows<Op, In, Acc, Out>, 256>()
                           : resident_blocks<reduce_columns<Op, In, Acc, Out>, 32 * kColumnLanes>();
  int64_t splits = 1;
  if (blocks < wave && p.R >= 4096) {
    splits = std::max<int64_t>(std::min<int64_t>(wave / blocks, p.R / (rows ? 2048 : 512)), 1);
  }
  splits = std::clamp<int64_t>(splits, 1, 65535);
  const int64_t chunk = (p.R + splits - 1) / splits;
  Scratch scratch(splits > 1 ? sizeof(Acc) * splits * p.K : 0);
  Acc* partial = scratch.as<Acc>();
  dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(splits));
  if (rows) {
    reduce_rows<Op, In, Acc, Out><<<grid, 256, 0, stream()>>>(src, dst, partial, p, chunk);
  } else {
    reduce_columns<Op, In, Acc, Out><<<grid, dim3(32, kColumnLanes), 0, stream()>>>(
        src, dst, partial, p, chunk, columns_vectorize(p, src));
  }
  if (splits > 1) {
    reduce_partials<Op, Acc, Out>
        <<<blocks_for(p.K), kThreads, 0, stream()>>>(partial, dst, p, splits);
  }
  check_launch("reduce");
}

// Sum and product outputs: small integers and bool widen to 32 bits as in MLX.
template <typename T>
using widened_t = std::conditional_t<
    std::is_same_v<T, bool> || std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t>, int32_t,
    std::conditional_t<std::is_same_v<T, uint8_t> || std::is_same_v<T, uint16_t>, uint32_t, T>>;

template <typename Op>
void reduce_arithmetic(const array& in, array& out, const std::vector<int>& axes) {
  dispatch_all<DeviceTypes>(in.dtype(), "reduce", [&]<typename T>() {
    if constexpr (is_half_v<T>) {
      if (out.dtype() == float32) {
        reduce_gpu<Op, T, float, float>(in, out, axes);
      } else {
        reduce_gpu<Op, T, float, T>(in, out, axes);
      }
    } else {
      using Out = widened_t<T>;
      reduce_gpu<Op, T, Out, Out>(in, out, axes);
    }
  });
}

}  // namespace

void Reduce::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  switch (type_) {
    case And:
      return dispatch_all<DeviceTypes>(in.dtype(), "all", [&]<typename T>() {
        reduce_gpu<red::And, T, bool, bool>(in, out, axes_);
      });
    case Or:
      return dispatch_all<DeviceTypes>(in.dtype(), "any", [&]<typename T>() {
        reduce_gpu<red::Or, T, bool, bool>(in, out, axes_);
      });
    case Sum:
      return reduce_arithmetic<red::Sum>(in, out, axes_);
    case Prod:
      return reduce_arithmetic<red::Prod>(in, out, axes_);
    case Min:
      return dispatch_all<DeviceTypes>(in.dtype(), "min", [&]<typename T>() {
        reduce_gpu<red::Min, T, compute_t<T>, T>(in, out, axes_);
      });
    case Max:
      return dispatch_all<DeviceTypes>(in.dtype(), "max", [&]<typename T>() {
        reduce_gpu<red::Max, T, compute_t<T>, T>(in, out, axes_);
      });
  }
}

}  // namespace mlx::core
