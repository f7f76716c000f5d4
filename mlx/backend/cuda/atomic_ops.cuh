// Atomic read-modify-write of one element of any device type: the hardware's atomicAdd where it
// exists, otherwise a compare-and-swap loop on the element (or on the aligned 32-bit word that
// holds a 1- or 2-byte element). `Op` is a reduction of reduce_ops.cuh.
#pragma once

#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/reduce_ops.cuh"

namespace mlx::core::cu {

template <typename T>
__device__ __forceinline__ T combine(T old, T update, auto op) {
  using Acc = compute_t<T>;
  return cast_to<T>(op(cast_to<Acc>(old), cast_to<Acc>(update)));
}

template <typename Op, typename T>
__device__ void atomic_update(T* addr, T update) {
  constexpr bool kSum = std::is_same_v<Op, red::Sum>;
  if constexpr (kSum && (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                         std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> ||
                         std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)) {
    atomicAdd(addr, update);
  } else if constexpr (kSum && (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>)) {
    atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(update));
  } else if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    using U = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
    U* word = reinterpret_cast<U*>(addr);
    U seen = *word, assumed;
    do {
      assumed = seen;
      T cur;
      memcpy(&cur, &assumed, sizeof(T));
      T next = combine(cur, update, Op{});
      U bits;
      memcpy(&bits, &next, sizeof(T));
      seen = atomicCAS(word, assumed, bits);
    } while (seen != assumed);
  } else {
    // 1- and 2-byte elements: swap the 32-bit word around them.
    auto a = reinterpret_cast<uintptr_t>(addr);
    unsigned int* word = reinterpret_cast<unsigned int*>(a & ~uintptr_t(3));
    const unsigned shift = (a & 3) * 8;
    const unsigned mask = ((1u << (8 * sizeof(T))) - 1) << shift;
    unsigned int seen = *word, assumed;
    do {
      assumed = seen;
      auto raw = static_cast<std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t>>(
          (assumed & mask) >> shift);
      T cur;
      memcpy(&cur, &raw, sizeof(T));
      T next = combine(cur, update, Op{});
      decltype(raw) nraw;
      memcpy(&nraw, &next, sizeof(T));
      unsigned int bits = (assumed & ~mask) | (static_cast<unsigned int>(nraw) << shift);
      seen = atomicCAS(word, assumed, bits);
    } while (seen != assumed);
  }
}

}  // namespace mlx::core::cu
