// Data types, their categories and MLX's type-promotion rules.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "mlx/types/complex.h"
#include "mlx/types/half_types.h"

namespace mlx::core {

struct Dtype {
  enum class Val : uint8_t {
    bool_,
    uint8,
    uint16,
    uint32,
    uint64,
    int8,
    int16,
    int32,
    int64,
    float16,
    float32,
    float64,
    bfloat16,
    complex64,
  };
  enum class Kind : char {
    b = 'b',  // bool
    u = 'u',  // unsigned int
    i = 'i',  // signed int
    f = 'f',  // float
    V = 'V',  // bfloat16 (no NumPy equivalent)
    c = 'c',  // complex
  };

  Val val;
  uint8_t size;

  constexpr Dtype(Val val, uint8_t size) : val(val), size(size) {}
  constexpr operator Val() const { return val; }
};

inline constexpr Dtype bool_{Dtype::Val::bool_, sizeof(bool)};
inline constexpr Dtype uint8{Dtype::Val::uint8, sizeof(uint8_t)};
inline constexpr Dtype uint16{Dtype::Val::uint16, sizeof(uint16_t)};
inline constexpr Dtype uint32{Dtype::Val::uint32, sizeof(uint32_t)};
inline constexpr Dtype uint64{Dtype::Val::uint64, sizeof(uint64_t)};
inline constexpr Dtype int8{Dtype::Val::int8, sizeof(int8_t)};
inline constexpr Dtype int16{Dtype::Val::int16, sizeof(int16_t)};
inline constexpr Dtype int32{Dtype::Val::int32, sizeof(int32_t)};
inline constexpr Dtype int64{Dtype::Val::int64, sizeof(int64_t)};
inline constexpr Dtype float16{Dtype::Val::float16, sizeof(uint16_t)};
inline constexpr Dtype float32{Dtype::Val::float32, sizeof(float)};
inline constexpr Dtype float64{Dtype::Val::float64, sizeof(double)};
inline constexpr Dtype bfloat16{Dtype::Val::bfloat16, sizeof(uint16_t)};
inline constexpr Dtype complex64{Dtype::Val::complex64, sizeof(complex64_t)};

inline constexpr int kNumDtypes = 14;

inline constexpr bool operator==(Dtype a, Dtype b) { return a.val == b.val; }
inline constexpr bool operator!=(Dtype a, Dtype b) { return a.val != b.val; }

// Abstract categories of MLX's dtype lattice (mx.floating, mx.integer, ...).
enum class DtypeCategory {
  complexfloating,
  floating,
  inexact,
  signedinteger,
  unsignedinteger,
  integer,
  number,
  generic,
};

Dtype::Kind kind(Dtype dt);
bool issubdtype(Dtype a, Dtype b);
bool issubdtype(Dtype a, DtypeCategory cat);
bool issubdtype(DtypeCategory a, Dtype b);
bool issubdtype(DtypeCategory a, DtypeCategory b);

inline bool is_floating_point(Dtype dt) {
  return dt == float16 || dt == bfloat16 || dt == float32 || dt == float64;
}
inline bool is_complex(Dtype dt) { return dt == complex64; }
inline bool is_inexact(Dtype dt) { return is_floating_point(dt) || is_complex(dt); }
inline bool is_integral(Dtype dt) { return !is_inexact(dt); }  // bool counts as integral
inline bool is_unsigned(Dtype dt) {
  return dt == bool_ || dt == uint8 || dt == uint16 || dt == uint32 || dt == uint64;
}
inline int size_of(Dtype dt) { return dt.size; }

// MLX's promotion table (like NumPy's but keeps float16/bfloat16 where NumPy widens).
Dtype promote_types(Dtype a, Dtype b);

// Name as printed by MLX ("float32", "bool", ...).
std::string dtype_name(Dtype dt);
std::ostream& operator<<(std::ostream& os, Dtype dt);
std::ostream& operator<<(std::ostream& os, DtypeCategory cat);
Dtype dtype_from_name(const std::string& name);

// The C++ type of a dtype value and the dtype of a C++ type.
template <typename T>
struct TypeToDtype;
#define MLX_TYPE_TO_DTYPE(T, DT)       \
  template <>                          \
  struct TypeToDtype<T> {              \
    static constexpr Dtype value = DT; \
  };
MLX_TYPE_TO_DTYPE(bool, bool_)
MLX_TYPE_TO_DTYPE(uint8_t, uint8)
MLX_TYPE_TO_DTYPE(uint16_t, uint16)
MLX_TYPE_TO_DTYPE(uint32_t, uint32)
MLX_TYPE_TO_DTYPE(uint64_t, uint64)
MLX_TYPE_TO_DTYPE(int8_t, int8)
MLX_TYPE_TO_DTYPE(int16_t, int16)
MLX_TYPE_TO_DTYPE(int32_t, int32)
MLX_TYPE_TO_DTYPE(int64_t, int64)
MLX_TYPE_TO_DTYPE(float16_t, float16)
MLX_TYPE_TO_DTYPE(bfloat16_t, bfloat16)
MLX_TYPE_TO_DTYPE(float, float32)
MLX_TYPE_TO_DTYPE(double, float64)
MLX_TYPE_TO_DTYPE(complex64_t, complex64)
MLX_TYPE_TO_DTYPE(std::complex<float>, complex64)
#undef MLX_TYPE_TO_DTYPE
// Platform aliases that are distinct types (long long vs long, char).
template <>
struct TypeToDtype<long long> {
  static constexpr Dtype value = sizeof(long long) == 8 ? int64 : int32;
};
template <>
struct TypeToDtype<unsigned long long> {
  static constexpr Dtype value = uint64;
};
template <>
struct TypeToDtype<char> {
  static constexpr Dtype value = int8;
};

template <typename T>
inline constexpr Dtype dtype_of() {
  return TypeToDtype<std::remove_cv_t<T>>::value;
}

// finfo / iinfo as in MLX (min, max, eps; for ints min/max).
struct finfo {
  explicit finfo(Dtype dtype);
  Dtype dtype;
  double min;
  double max;
  double eps;
  double tiny;  // smallest positive normal
};

struct iinfo {
  explicit iinfo(Dtype dtype);
  Dtype dtype;
  int64_t min;
  uint64_t max;
};

}  // namespace mlx::core
