// Select::eval_gpu: where(cond, x, y) over any layout, moving bytes by item size.
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/primitives/elementwise.h"

namespace mlx::core {

namespace {

template <typename T>
__global__ void select_dense(const bool* c, const T* x, const T* y, T* out, int64_t n, int64_t sc,
                             int64_t sx, int64_t sy) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = c[i * sc] ? x[i * sx] : y[i * sy];
  }
}

template <typename T>
__global__ void select_strided(const bool* c, const T* x, const T* y, T* out, int64_t n,
                               cu::StridedParams<3> p) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[3];
    cu::strided_offsets(p, i, off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

// 1 for a dense operand, 0 for a broadcast scalar, -1 for anything else.
int64_t dense_step(const array& a) { return a.data_size() == 1 ? 0 : cu::is_dense(a) ? 1 : -1; }

}  // namespace

void Select::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (out.size() == 0) {
    out.set_data(allocator::malloc(0));
    return;
  }
  const array& cond = inputs[0];
  const array& x = inputs[1];
  const array& y = inputs[2];
  int64_t n = static_cast<int64_t>(out.size());
  dispatch_by_size(out.itemsize(), "where", [&]<typename T>() {
    const bool* pc = cond.gpu_data<bool>();
    const T* px = x.gpu_data<T>();
    const T* py = y.gpu_data<T>();
    T* dst = cu::elementwise_output<T>(out, {&x, &y});
    int64_t sc = dense_step(cond), sx = dense_step(x), sy = dense_step(y);
    if (sc >= 0 && sx >= 0 && sy >= 0) {
      select_dense<T>
          <<<cu::blocks_for(n), cu::kThreads, 0, cu::stream()>>>(pc, px, py, dst, n, sc, sx, sy);
    } else {
      auto layout = collapse_dims<3>(out.shape(), {cond.strides(), x.strides(), y.strides()});
      select_strided<T><<<cu::blocks_for(n), cu::kThreads, 0, cu::stream()>>>(
          pc, px, py, dst, n, cu::make_params(layout, "where"));
    }
  });
  cu::check_launch("where");
}

}  // namespace mlx::core
