// ArgReduce::eval_cpu's GPU twin: one warp per output line along the axis; the first extreme
// wins ties and the first NaN wins over everything, as in NumPy.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/backend/cuda/reduce_ops.cuh"
#include "mlx/primitives/reduction.h"

namespace mlx::core {

namespace {

using namespace cu;

template <typename V>
__device__ __forceinline__ bool is_nan(V v) {
  if constexpr (is_complex_v<V>) {
    return ::isnan(v.real()) || ::isnan(v.imag());
  } else if constexpr (std::is_floating_point_v<V>) {
    return ::isnan(v);
  } else {
    return false;
  }
}

// Whether candidate (v, i) beats (best, bi).
template <bool kMax, typename V>
__device__ __forceinline__ bool beats(V v, uint32_t i, V best, uint32_t bi) {
  bool vn = is_nan(v), bn = is_nan(best);
  if (vn || bn) {
    return vn && (!bn || i < bi);
  }
  bool strictly = kMax ? op::less(best, v) : op::less(v, best);
  bool tie = !op::less(best, v) && !op::less(v, best);
  return strictly || (tie && i < bi);
}

template <bool kMax, typename T>
__global__ void arg_reduce_kernel(const T* in, uint32_t* out, int64_t lines, int64_t n,
                                  int64_t axis_stride, StridedParams<2> p) {
  using V = compute_t<T>;
  const int64_t line = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (line >= lines) {
    return;
  }
  int64_t off[2];
  strided_offsets(p, line, off);
  const T* x = in + off[0];
  V best{};
  uint32_t bi = 0xffffffffu;
  for (int64_t i = lane; i < n; i += 32) {
    V v = op::up(x[i * axis_stride]);
    if (bi == 0xffffffffu || beats<kMax>(v, uint32_t(i), best, bi)) {
      best = v;
      bi = static_cast<uint32_t>(i);
    }
  }
  for (int o = 16; o > 0; o /= 2) {
    V ov = shfl_down(best, o);
    uint32_t oi = __shfl_down_sync(0xffffffff, bi, o);
    if (oi != 0xffffffffu && (bi == 0xffffffffu || beats<kMax>(ov, oi, best, bi))) {
      best = ov;
      bi = oi;
    }
  }
  if (lane == 0) {
    out[off[1]] = bi == 0xffffffffu ? 0 : bi;
  }
}

}  // namespace

void ArgReduce::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  auto layout = collapse_dims_except(in, out, axis_);
  int64_t lines = static_cast<int64_t>(out.size());
  int64_t n = in.shape(axis_);
  dispatch_all<DeviceTypes>(in.dtype(), name(), [&]<typename T>() {
    auto params = make_params(layout, name());
    unsigned blocks = static_cast<unsigned>((lines * 32 + kThreads - 1) / kThreads);
    if (type_ == ArgMax) {
      arg_reduce_kernel<true, T><<<blocks, kThreads, 0, cu::stream()>>>(
          in.gpu_data<T>(), out.gpu_data<uint32_t>(), lines, n, in.strides()[axis_], params);
    } else {
      arg_reduce_kernel<false, T><<<blocks, kThreads, 0, cu::stream()>>>(
          in.gpu_data<T>(), out.gpu_data<uint32_t>(), lines, n, in.strides()[axis_], params);
    }
  });
  check_launch(name());
}

}  // namespace mlx::core
