// What elementwise-style kernels share: launch sizes and strided layouts passed by value.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "mlx/array.h"
#include "mlx/backend/common/layout.h"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/runtime.h"
#include "mlx/backend/cuda/scratch.h"
#include "mlx/memory/residency.h"

namespace mlx::core::cu {

inline constexpr int kThreads = 256;
// Most dimensions a strided kernel handles after collapsing; more go through a contiguous copy.
inline constexpr int kMaxDims = 10;

// Blocks for `work` items of kThreads threads each, capped so grid-stride loops keep a few
// waves resident.
inline unsigned blocks_for(int64_t work, int threads = kThreads) {
  int64_t b = (work + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(b, 1, int64_t(1) << 20));
}

// A collapsed layout of N operands over one shape.
template <size_t N>
struct StridedParams {
  int ndim;
  int32_t shape[kMaxDims];
  int64_t strides[N][kMaxDims];
};

template <size_t N>
StridedParams<N> make_params(const Layout<N>& layout, const char* op) {
  if (layout.shape.size() > static_cast<size_t>(kMaxDims)) {
    throw std::invalid_argument(std::string("[") + op + "] More than " + std::to_string(kMaxDims) +
                                " non-contiguous dimensions.");
  }
  StridedParams<N> p{};
  p.ndim = static_cast<int>(layout.shape.size());
  for (int d = 0; d < p.ndim; ++d) {
    p.shape[d] = layout.shape[d];
    for (size_t k = 0; k < N; ++k) {
      p.strides[k][d] = layout.strides[k][d];
    }
  }
  return p;
}

// Offsets (in elements) of linear index i in each operand.
template <size_t N>
__device__ __forceinline__ void strided_offsets(const StridedParams<N>& p, int64_t i,
                                                int64_t (&off)[N]) {
#pragma unroll
  for (size_t k = 0; k < N; ++k) {
    off[k] = 0;
  }
  for (int d = p.ndim - 1; d >= 0; --d) {
    int64_t q = i / p.shape[d];
    int64_t r = i - q * p.shape[d];
#pragma unroll
    for (size_t k = 0; k < N; ++k) {
      off[k] += r * p.strides[k][d];
    }
    i = q;
  }
}

// A new row-contiguous device buffer for `out`.
inline void allocate(array& out) { out.set_gpu_data(allocator::gpu_malloc(out.nbytes())); }

// Dense (every element once, in order) with data_size == size.
inline bool is_dense(const array& a) {
  return a.flags().row_contiguous && a.data_size() == a.size();
}

}  // namespace mlx::core::cu
