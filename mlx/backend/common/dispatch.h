// Runs a template lambda `f.template operator()<T>()` with the C++ type of a dtype.
#pragma once

#include <stdexcept>
#include <string>

#include "mlx/dtype.h"

namespace mlx::core {

[[noreturn]] inline void unsupported_dtype(const char* op, Dtype dt) {
  throw std::invalid_argument(std::string("[") + op + "] Unsupported dtype " + dtype_name(dt) +
                              ".");
}

#define MLX_DISPATCH_CASE(VAL, T) \
  case Dtype::Val::VAL:           \
    return f.template operator()<T>();

template <typename F>
decltype(auto) dispatch_float(Dtype dt, const char* op, F&& f) {
  switch (dt.val) {
    MLX_DISPATCH_CASE(float16, float16_t)
    MLX_DISPATCH_CASE(bfloat16, bfloat16_t)
    MLX_DISPATCH_CASE(float32, float)
    MLX_DISPATCH_CASE(float64, double)
    default:
      unsupported_dtype(op, dt);
  }
}

template <typename F>
decltype(auto) dispatch_inexact(Dtype dt, const char* op, F&& f) {
  if (dt == complex64) {
    return f.template operator()<complex64_t>();
  }
  return dispatch_float(dt, op, std::forward<F>(f));
}

template <typename F>
decltype(auto) dispatch_int(Dtype dt, const char* op, F&& f) {
  switch (dt.val) {
    MLX_DISPATCH_CASE(uint8, uint8_t)
    MLX_DISPATCH_CASE(uint16, uint16_t)
    MLX_DISPATCH_CASE(uint32, uint32_t)
    MLX_DISPATCH_CASE(uint64, uint64_t)
    MLX_DISPATCH_CASE(int8, int8_t)
    MLX_DISPATCH_CASE(int16, int16_t)
    MLX_DISPATCH_CASE(int32, int32_t)
    MLX_DISPATCH_CASE(int64, int64_t)
    default:
      unsupported_dtype(op, dt);
  }
}

// Every dtype but complex.
template <typename F>
decltype(auto) dispatch_real(Dtype dt, const char* op, F&& f) {
  if (dt == bool_) {
    return f.template operator()<bool>();
  }
  if (is_floating_point(dt)) {
    return dispatch_float(dt, op, std::forward<F>(f));
  }
  return dispatch_int(dt, op, std::forward<F>(f));
}

template <typename F>
decltype(auto) dispatch_all(Dtype dt, const char* op, F&& f) {
  if (dt == complex64) {
    return f.template operator()<complex64_t>();
  }
  return dispatch_real(dt, op, std::forward<F>(f));
}

// Same-size unsigned type: moving bytes does not care about the dtype.
template <typename F>
decltype(auto) dispatch_by_size(int size, const char* op, F&& f) {
  switch (size) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    case 8:
      return f.template operator()<uint64_t>();
    default:
      throw std::invalid_argument(std::string("[") + op + "] Unsupported item size.");
  }
}

#undef MLX_DISPATCH_CASE

}  // namespace mlx::core
