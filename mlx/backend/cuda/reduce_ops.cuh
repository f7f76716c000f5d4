// Reduction operators for the GPU kernels: identity, combine, and how an input element enters
// the accumulator. Min and Max propagate NaN, as the CPU does.
#pragma once

#include <cuda/std/limits>

#include "mlx/backend/cuda/device_types.cuh"

namespace mlx::core::cu {

// A warp shuffle of any element type: `shuffle(x)` moves one 32-bit-or-wider word; complex
// numbers move as two floats, narrow types widened to int.
template <typename T, typename Shuffle>
__device__ __forceinline__ T shuffle_value(T v, Shuffle shuffle) {
  if constexpr (is_complex_v<T>) {
    return T(shuffle(v.real()), shuffle(v.imag()));
  } else if constexpr (sizeof(T) < 4) {
    return static_cast<T>(shuffle(static_cast<int>(v)));
  } else {
    return shuffle(v);
  }
}

template <typename T>
__device__ __forceinline__ T shfl_down(T v, int offset) {
  return shuffle_value(v, [offset](auto x) { return __shfl_down_sync(0xffffffff, x, offset); });
}

template <typename T>
__device__ __forceinline__ T shfl_up(T v, int offset) {
  return shuffle_value(v, [offset](auto x) { return __shfl_up_sync(0xffffffff, x, offset); });
}

namespace red {

struct Sum {
  template <typename Acc>
  __device__ static Acc identity() {
    return Acc(0);
  }
  template <typename Acc, typename In>
  __device__ static Acc load(In x) {
    return cast_to<Acc>(x);
  }
  template <typename Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    return a + b;
  }
};

struct Prod {
  template <typename Acc>
  __device__ static Acc identity() {
    return Acc(1);
  }
  template <typename Acc, typename In>
  __device__ static Acc load(In x) {
    return cast_to<Acc>(x);
  }
  template <typename Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    return a * b;
  }
};

struct And {
  template <typename Acc>
  __device__ static Acc identity() {
    return true;
  }
  template <typename Acc, typename In>
  __device__ static Acc load(In x) {
    if constexpr (is_complex_v<In>) {
      return x.real() != 0 || x.imag() != 0;
    } else {
      return cast_to<bool>(x);
    }
  }
  template <typename Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    return a && b;
  }
};

struct Or {
  template <typename Acc>
  __device__ static Acc identity() {
    return false;
  }
  template <typename Acc, typename In>
  __device__ static Acc load(In x) {
    return And::load<Acc>(x);
  }
  template <typename Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    return a || b;
  }
};

template <bool kMax>
struct Extremum {
  template <typename Acc>
  __device__ static Acc identity() {
    if constexpr (is_complex_v<Acc>) {
      float inf = cuda::std::numeric_limits<float>::infinity();
      return kMax ? Acc(-inf, -inf) : Acc(inf, inf);
    } else if constexpr (std::is_floating_point_v<Acc>) {
      return kMax ? -cuda::std::numeric_limits<Acc>::infinity()
                  : cuda::std::numeric_limits<Acc>::infinity();
    } else {
      return kMax ? cuda::std::numeric_limits<Acc>::lowest()
                  : cuda::std::numeric_limits<Acc>::max();
    }
  }
  template <typename Acc, typename In>
  __device__ static Acc load(In x) {
    return cast_to<Acc>(x);
  }
  template <typename Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    if constexpr (std::is_floating_point_v<Acc>) {
      if (::isnan(a)) {
        return a;
      }
      if (::isnan(b)) {
        return b;
      }
      return (kMax ? a > b : a < b) ? a : b;
    } else if constexpr (is_complex_v<Acc>) {
      bool a_first = a.real() != b.real() ? a.real() > b.real() : a.imag() > b.imag();
      return (kMax ? a_first : !a_first) ? a : b;
    } else {
      return (kMax ? a > b : a < b) ? a : b;
    }
  }
};
using Max = Extremum<true>;
using Min = Extremum<false>;

}  // namespace red

// Combines one value per thread over the block (blockDim.x a multiple of 32); every thread
// gets the result. `shared` holds 32 accumulators; calls may follow each other directly.
template <typename Op, typename Acc>
__device__ Acc block_reduce(Acc v, Acc* shared) {
  for (int o = 16; o > 0; o /= 2) {
    v = Op{}(v, shfl_down(v, o));
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // the previous call's readers are done with shared[0]
  if (lane == 0) {
    shared[warp] = v;
  }
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x / 32) ? shared[lane] : Op::template identity<Acc>();
    for (int o = 16; o > 0; o /= 2) {
      v = Op{}(v, shfl_down(v, o));
    }
    if (lane == 0) {
      shared[0] = v;
    }
  }
  __syncthreads();
  return shared[0];
}

}  // namespace mlx::core::cu
