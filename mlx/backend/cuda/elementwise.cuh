// Elementwise kernel drivers: dense operands (16-byte vector loads and stores, a broadcast
// scalar read once per thread) and any strided layout (collapsed dimensions, one index
// computation per element). Outputs are row-contiguous; a donatable dense input is reused.
#pragma once

#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/memory/residency.h"

namespace mlx::core::cu {

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <typename In, typename Out>
constexpr int vec_width() {
  constexpr int wide = sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out);
  return wide >= 16 ? 1 : 16 / wide;
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The output of an elementwise op: the first donatable dense input of the same item size, or
// a new device block.
template <typename Out>
Out* elementwise_output(array& out, std::initializer_list<const array*> inputs) {
  for (const array* in : inputs) {
    if (in->is_donatable() && is_dense(*in) && in->itemsize() == sizeof(Out) &&
        in->size() == out.size()) {
      out.copy_shared_buffer(*in);
      return out.gpu_data<Out>();
    }
  }
  out.set_gpu_data(allocator::gpu_malloc(out.nbytes()));
  return out.gpu_data<Out>();
}

// ---- unary ----

template <typename Op, typename In, typename Out, int V>
__global__ void unary_dense(const In* in, Out* out, int64_t n) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x * V;
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * V; i < n; i += step) {
    if (i + V <= n) {
      Vec<In, V> x = *reinterpret_cast<const Vec<In, V>*>(in + i);
      Vec<Out, V> y;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        y.v[k] = static_cast<Out>(Op{}(x.v[k]));
      }
      *reinterpret_cast<Vec<Out, V>*>(out + i) = y;
    } else {
      for (int64_t k = i; k < n; ++k) {
        out[k] = static_cast<Out>(Op{}(in[k]));
      }
    }
  }
}

template <typename Op, typename In, typename Out>
__global__ void unary_strided(const In* in, Out* out, int64_t n, StridedParams<1> p) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[1];
    strided_offsets(p, i, off);
    out[i] = static_cast<Out>(Op{}(in[off[0]]));
  }
}

template <typename Op, typename In, typename Out>
void unary_gpu(const array& in, array& out, const char* name) {
  if (out.size() == 0) {
    out.set_data(allocator::malloc(0));
    return;
  }
  const In* src = in.gpu_data<In>();
  Out* dst = elementwise_output<Out>(out, {&in});
  int64_t n = static_cast<int64_t>(out.size());
  constexpr int V = vec_width<In, Out>();
  if (is_dense(in) && aligned16(src) && aligned16(dst)) {
    unary_dense<Op, In, Out, V>
        <<<blocks_for((n + V - 1) / V), kThreads, 0, stream()>>>(src, dst, n);
  } else if (is_dense(in)) {
    unary_dense<Op, In, Out, 1><<<blocks_for(n), kThreads, 0, stream()>>>(src, dst, n);
  } else {
    auto layout = collapse_dims<1>(in.shape(), {in.strides()});
    unary_strided<Op, In, Out>
        <<<blocks_for(n), kThreads, 0, stream()>>>(src, dst, n, make_params(layout, name));
  }
  check_launch(name);
}

// ---- binary ----

// kScalar: 0 = both dense, 1 = a is one broadcast element, 2 = b is.
template <typename Op, typename In, typename Out, int kScalar, int V>
__global__ void binary_dense(const In* a, const In* b, Out* out, int64_t n) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x * V;
  In sa = kScalar == 1 ? a[0] : In{};
  In sb = kScalar == 2 ? b[0] : In{};
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * V; i < n; i += step) {
    if (i + V <= n) {
      Vec<In, V> x, y;
      if constexpr (kScalar != 1) {
        x = *reinterpret_cast<const Vec<In, V>*>(a + i);
      }
      if constexpr (kScalar != 2) {
        y = *reinterpret_cast<const Vec<In, V>*>(b + i);
      }
      Vec<Out, V> z;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        z.v[k] = static_cast<Out>(Op{}(kScalar == 1 ? sa : x.v[k], kScalar == 2 ? sb : y.v[k]));
      }
      *reinterpret_cast<Vec<Out, V>*>(out + i) = z;
    } else {
      for (int64_t k = i; k < n; ++k) {
        out[k] = static_cast<Out>(Op{}(kScalar == 1 ? sa : a[k], kScalar == 2 ? sb : b[k]));
      }
    }
  }
}

template <typename Op, typename In, typename Out>
__global__ void binary_strided(const In* a, const In* b, Out* out, int64_t n, StridedParams<2> p) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[2];
    strided_offsets(p, i, off);
    out[i] = static_cast<Out>(Op{}(a[off[0]], b[off[1]]));
  }
}

template <typename Op, typename In, typename Out, int kScalar>
void launch_binary_dense(const In* a, const In* b, Out* out, int64_t n) {
  constexpr int V = vec_width<In, Out>();
  bool aligned = (kScalar == 1 || aligned16(a)) && (kScalar == 2 || aligned16(b)) && aligned16(out);
  if (aligned) {
    binary_dense<Op, In, Out, kScalar, V>
        <<<blocks_for((n + V - 1) / V), kThreads, 0, stream()>>>(a, b, out, n);
  } else {
    binary_dense<Op, In, Out, kScalar, 1><<<blocks_for(n), kThreads, 0, stream()>>>(a, b, out, n);
  }
}

template <typename Op, typename In, typename Out>
void binary_gpu(const array& a, const array& b, array& out, const char* name) {
  if (out.size() == 0) {
    out.set_data(allocator::malloc(0));
    return;
  }
  const In* pa = a.gpu_data<In>();
  const In* pb = b.gpu_data<In>();
  bool a_scalar = a.data_size() == 1;
  bool b_scalar = b.data_size() == 1;
  Out* dst = a_scalar   ? elementwise_output<Out>(out, {&b})
             : b_scalar ? elementwise_output<Out>(out, {&a})
                        : elementwise_output<Out>(out, {&a, &b});
  int64_t n = static_cast<int64_t>(out.size());
  if (is_dense(a) && is_dense(b)) {
    launch_binary_dense<Op, In, Out, 0>(pa, pb, dst, n);
  } else if (a_scalar && is_dense(b)) {
    launch_binary_dense<Op, In, Out, 1>(pa, pb, dst, n);
  } else if (b_scalar && is_dense(a)) {
    launch_binary_dense<Op, In, Out, 2>(pa, pb, dst, n);
  } else {
    auto layout = collapse_dims<2>(out.shape(), {a.strides(), b.strides()});
    binary_strided<Op, In, Out>
        <<<blocks_for(n), kThreads, 0, stream()>>>(pa, pb, dst, n, make_params(layout, name));
  }
  check_launch(name);
}

}  // namespace mlx::core::cu
