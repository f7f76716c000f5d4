// RMSNorm and LayerNorm on the GPU, forward and backward: a block per row of the last axis,
// statistics in float32 (float64 for double inputs), weights and bias read with their own
// stride. The backward pass recomputes each row's statistics; weight and bias gradients are
// summed per block (rows split over a fixed grid, so the sums do not depend on scheduling),
// then the blocks' parts are added in order. The fused single-read kernels come with the next
// issue.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/backend/cuda/reduce_ops.cuh"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

namespace {

using namespace cu;

// The row's mean (0 for RMS) and 1 / sqrt(variance + eps), every thread of the block taking
// part.
template <typename T, bool kLayer>
__device__ void row_stats(const T* row, int64_t d, float eps, acc_t<T>* shared, acc_t<T>& mean,
                          acc_t<T>& inv) {
  using A = acc_t<T>;
  mean = 0;
  if constexpr (kLayer) {
    A s = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      s += static_cast<A>(op::up(row[i]));
    }
    mean = block_reduce<red::Sum>(s, shared) / A(d);
  }
  A ss = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    A v = static_cast<A>(op::up(row[i])) - mean;
    ss += v * v;
  }
  inv = A(1) / ::sqrt(block_reduce<red::Sum>(ss, shared) / A(d) + A(eps));
}

// Weight and bias: null for "absent" (1 and 0).
template <typename T, bool kLayer>
__global__ void norm_rows(const T* x, T* out, int64_t d, const T* w, int64_t w_stride, const T* b,
                          int64_t b_stride, float eps) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const T* row = x + int64_t(blockIdx.x) * d;
  T* orow = out + int64_t(blockIdx.x) * d;
  A mean, inv;
  row_stats<T, kLayer>(row, d, eps, shared, mean, inv);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    A v = (static_cast<A>(op::up(row[i])) - mean) * inv;
    if (w != nullptr) {
      v *= static_cast<A>(op::up(w[i * w_stride]));
    }
    if (b != nullptr) {
      v += static_cast<A>(op::up(b[i * b_stride]));
    }
    orow[i] = cast_to<T>(v);
  }
}

template <bool kLayer>
void norm_gpu(const std::vector<array>& inputs, array& out, bool has_weight, bool has_bias,
              float eps, const char* name) {
  allocate(out);
  if (out.size() == 0) {
    return;
  }
  array x = dense_copy(inputs[0]);
  int64_t d = x.shape(-1);
  int64_t rows = static_cast<int64_t>(x.size()) / d;
  int next = 1;
  const array* w = has_weight ? &inputs[next++] : nullptr;
  const array* b = has_bias ? &inputs[next++] : nullptr;
  int threads = 32;
  while (threads < 512 && threads * 8 < d) {
    threads *= 2;
  }
  dispatch_float<DeviceTypes>(out.dtype(), name, [&]<typename T>() {
    norm_rows<T, kLayer><<<static_cast<unsigned>(rows), threads, 0, cu::stream()>>>(
        x.gpu_data<T>(), out.gpu_data<T>(), d, w ? w->gpu_data<T>() : nullptr,
        w ? w->strides().back() : 0, b ? b->gpu_data<T>() : nullptr, b ? b->strides().back() : 0,
        eps);
  });
  check_launch(name);
}

// Backward over rows r = blockIdx.x, blockIdx.x + gridDim.x, ...; parts are [gridDim, d].
template <typename T, bool kLayer>
__global__ void norm_vjp_rows(const T* x, const T* g, T* dx, int64_t rows, int64_t d, const T* w,
                              int64_t w_stride, float eps, acc_t<T>* dw_part, acc_t<T>* db_part) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  auto wt = [&](int64_t i) {
    return w != nullptr ? static_cast<A>(op::up(w[i * w_stride])) : A(1);
  };
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    const T* gr = g + r * d;
    A mean, inv;
    row_stats<T, kLayer>(xr, d, eps, shared, mean, inv);
    // s1 = sum(g w), s2 = sum(g w xhat); RMS needs only s2 (xhat = x inv).
    A s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      A gw = static_cast<A>(op::up(gr[i])) * wt(i);
      s1 += gw;
      s2 += gw * (static_cast<A>(op::up(xr[i])) - mean) * inv;
    }
    if constexpr (kLayer) {
      s1 = block_reduce<red::Sum>(s1, shared) / A(d);
    }
    s2 = block_reduce<red::Sum>(s2, shared) / A(d);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      A gi = static_cast<A>(op::up(gr[i]));
      A xhat = (static_cast<A>(op::up(xr[i])) - mean) * inv;
      A v = kLayer ? inv * (gi * wt(i) - s1 - xhat * s2) : inv * (gi * wt(i) - xhat * s2);
      dx[r * d + i] = cast_to<T>(v);
      if (dw_part != nullptr) {
        dw_part[int64_t(blockIdx.x) * d + i] += gi * xhat;
      }
      if (db_part != nullptr) {
        db_part[int64_t(blockIdx.x) * d + i] += gi;
      }
    }
  }
}

// out[i] = sum over parts p of part[p * d + i], in order.
template <typename T>
__global__ void sum_parts(const acc_t<T>* parts, int64_t n_parts, int64_t d, T* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < d) {
    acc_t<T> s = 0;
    for (int64_t p = 0; p < n_parts; ++p) {
      s += parts[p * d + i];
    }
    out[i] = cast_to<T>(s);
  }
}

// outputs: {dx, dweight?, dbias?}; inputs {x, weight?, cotangent}.
template <bool kLayer>
void norm_vjp_gpu(const std::vector<array>& inputs, std::vector<array>& outputs, bool has_weight,
                  bool has_bias, float eps, const char* name) {
  array& dx = outputs[0];
  allocate(dx);
  for (size_t k = 1; k < outputs.size(); ++k) {
    allocate(outputs[k]);
  }
  array x = dense_copy(inputs[0]);
  array g = dense_copy(inputs.back());
  const array* w = has_weight ? &inputs[1] : nullptr;
  int64_t d = x.shape(-1);
  int64_t rows = d == 0 ? 0 : static_cast<int64_t>(x.size()) / d;
  if (d == 0) {
    return;
  }
  // At least 16 rows a block, so the parts stay small next to dx.
  int64_t parts = std::clamp<int64_t>(rows / 16, 1, 2 * device(0).props.multiProcessorCount);
  int n_sums = has_weight + has_bias;
  int threads = 32;
  while (threads < 512 && threads * 8 < d) {
    threads *= 2;
  }
  dispatch_float<DeviceTypes>(dx.dtype(), name, [&]<typename T>() {
    using A = acc_t<T>;
    size_t bytes = sizeof(A) * parts * d * n_sums;
    Scratch scratch(bytes);
    A* dw_part = nullptr;
    A* db_part = nullptr;
    if (n_sums > 0) {
      MLX_CUDA_CHECK(cudaMemsetAsync(scratch.as<void>(), 0, bytes, cu::stream()));
      A* base = scratch.as<A>();
      dw_part = has_weight ? base : nullptr;
      db_part = has_bias ? base + (has_weight ? parts * d : 0) : nullptr;
    }
    if (rows > 0) {
      norm_vjp_rows<T, kLayer><<<static_cast<unsigned>(parts), threads, 0, cu::stream()>>>(
          x.gpu_data<T>(), g.gpu_data<T>(), dx.gpu_data<T>(), rows, d,
          w ? w->gpu_data<T>() : nullptr, w ? w->strides().back() : 0, eps, dw_part, db_part);
    }
    unsigned blocks = static_cast<unsigned>((d + kThreads - 1) / kThreads);
    if (has_weight) {
      sum_parts<T>
          <<<blocks, kThreads, 0, cu::stream()>>>(dw_part, parts, d, outputs[1].gpu_data<T>());
    }
    if (has_bias) {
      sum_parts<T>
          <<<blocks, kThreads, 0, cu::stream()>>>(db_part, parts, d, outputs.back().gpu_data<T>());
    }
  });
  check_launch(name);
}

}  // namespace

void RMSNormVJP::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  norm_vjp_gpu<false>(inputs, outputs, has_weight_, false, eps_, "rms_norm_vjp");
}

void LayerNormVJP::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  norm_vjp_gpu<true>(inputs, outputs, has_weight_, has_bias_, eps_, "layer_norm_vjp");
}

void RMSNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  norm_gpu<false>(inputs, out, has_weight_, false, eps_, "rms_norm");
}

void LayerNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  norm_gpu<true>(inputs, out, has_weight_, has_bias_, eps_, "layer_norm");
}

}  // namespace mlx::core::fast
