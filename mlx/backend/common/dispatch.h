// Runs a template lambda `f.template operator()<T>()` with the C++ type of a dtype. The types
// of the 16-bit floats and of complex64 differ between backends: `Types` names them (the host's
// by default; the CUDA backend passes its device types).
#pragma once

#include <stdexcept>
#include <string>

#include "mlx/dtype.h"

namespace mlx::core {

[[noreturn]] inline void unsupported_dtype(const char* op, Dtype dt) {
  throw std::invalid_argument(std::string("[") + op + "] Unsupported dtype " + dtype_name(dt) +
                              ".");
}

struct HostTypes {
  using float16 = float16_t;
  using bfloat16 = bfloat16_t;
  using complex64 = complex64_t;
};

#define MLX_DISPATCH_CASE(VAL, T) \
  case Dtype::Val::VAL:           \
    return f.template operator()<T>();

template <typename Types = HostTypes, typename F>
decltype(auto) dispatch_float(Dtype dt, const char* op, F&& f) {
  switch (dt.val) {
    MLX_DISPATCH_CASE(float16, typename Types::float16)
    MLX_DISPATCH_CASE(bfloat16, typename Types::bfloat16)
    MLX_DISPATCH_CASE(float32, float)
    MLX_DISPATCH_CASE(float64, double)
    default:
      unsupported_dtype(op, dt);
  }
}

template <typename Types = HostTypes, typename F>
decltype(auto) dispatch_inexact(Dtype dt, const char* op, F&& f) {
  if (dt == complex64) {
    return f.template operator()<typename Types::complex64>();
  }
  return dispatch_float<Types>(dt, op, std::forward<F>(f));
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
template <typename Types = HostTypes, typename F>
decltype(auto) dispatch_real(Dtype dt, const char* op, F&& f) {
  if (dt == bool_) {
    return f.template operator()<bool>();
  }
  if (is_floating_point(dt)) {
    return dispatch_float<Types>(dt, op, std::forward<F>(f));
  }
  return dispatch_int(dt, op, std::forward<F>(f));
}

template <typename Types = HostTypes, typename F>
decltype(auto) dispatch_all(Dtype dt, const char* op, F&& f) {
  if (dt == complex64) {
    return f.template operator()<typename Types::complex64>();
  }
  return dispatch_real<Types>(dt, op, std::forward<F>(f));
}

// The dtypes an elementwise op accepts (backend/common/elementwise_types.h).
enum class TypeClass { all, real, inexact, floats, ints, complex_only };

// dispatch over a class of dtypes; `ints` includes bool, `complex_only` is complex64 alone.
template <TypeClass kClass, typename Types = HostTypes, typename F>
decltype(auto) dispatch_class(Dtype dt, const char* op, F&& f) {
  if constexpr (kClass == TypeClass::all) {
    return dispatch_all<Types>(dt, op, std::forward<F>(f));
  } else if constexpr (kClass == TypeClass::real) {
    return dispatch_real<Types>(dt, op, std::forward<F>(f));
  } else if constexpr (kClass == TypeClass::inexact) {
    return dispatch_inexact<Types>(dt, op, std::forward<F>(f));
  } else if constexpr (kClass == TypeClass::floats) {
    return dispatch_float<Types>(dt, op, std::forward<F>(f));
  } else if constexpr (kClass == TypeClass::ints) {
    if (dt == bool_) {
      return f.template operator()<bool>();
    }
    return dispatch_int(dt, op, std::forward<F>(f));
  } else {
    if (dt != complex64) {
      unsupported_dtype(op, dt);
    }
    return f.template operator()<typename Types::complex64>();
  }
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
