// Element conversion between dtypes with NumPy semantics, on the host: what array
// construction, item() and every host kernel that casts use.
#pragma once

#include <cstring>
#include <type_traits>

#include "mlx/backend/common/dispatch.h"

namespace mlx::core {

// Value conversion between any two element types with NumPy semantics.
template <typename To, typename From>
inline To cast_value(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, complex64_t>) {
      return x.real() != 0 || x.imag() != 0;
    } else {
      return static_cast<float>(x) != 0;
    }
  } else if constexpr (std::is_same_v<To, complex64_t>) {
    return complex64_t(static_cast<float>(x), 0.0f);
  } else if constexpr (std::is_same_v<From, complex64_t>) {
    return cast_value<To>(x.real());
  } else if constexpr (std::is_same_v<From, float16_t> || std::is_same_v<From, bfloat16_t>) {
    return static_cast<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, float16_t> || std::is_same_v<To, bfloat16_t>) {
    return To(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

template <typename From, typename To>
void convert_row(const From* src, int64_t src_stride, To* dst, int64_t dst_stride, int64_t n) {
  if (n <= 0) {
    return;  // the pointers of an empty row may be null
  }
  if (src_stride == 1 && dst_stride == 1) {
    if constexpr (std::is_same_v<From, To>) {
      std::memcpy(dst, src, n * sizeof(To));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = cast_value<To>(src[i]);
      }
    }
  } else if (src_stride == 0) {
    To v = cast_value<To>(src[0]);
    for (int64_t i = 0; i < n; ++i) {
      dst[i * dst_stride] = v;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      dst[i * dst_stride] = cast_value<To>(src[i * src_stride]);
    }
  }
}

// Calls f.template operator()<From, To>() for the element types of two dtypes. Copies between
// equal dtypes move bytes, so they go through same-size unsigned types.
template <typename F>
void dispatch_pair(Dtype from, Dtype to, const char* op, F&& f) {
  if (from == to) {
    dispatch_by_size(from.size, op, [&]<typename T>() { f.template operator()<T, T>(); });
    return;
  }
  dispatch_all(from, op, [&]<typename From>() {
    dispatch_all(to, op, [&]<typename To>() { f.template operator()<From, To>(); });
  });
}

// dst[i] = convert(src[i]) for n contiguous elements, on the calling thread.
void convert_elements(const void* src, Dtype src_dtype, void* dst, Dtype dst_dtype, size_t n);

}  // namespace mlx::core
