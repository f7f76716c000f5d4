#include "mlx/dtype.h"

#include <limits>
#include <stdexcept>

namespace mlx::core {

namespace {

constexpr Dtype::Val b = Dtype::Val::bool_, u8 = Dtype::Val::uint8, u16 = Dtype::Val::uint16,
                     u32 = Dtype::Val::uint32, u64 = Dtype::Val::uint64, i8 = Dtype::Val::int8,
                     i16 = Dtype::Val::int16, i32 = Dtype::Val::int32, i64 = Dtype::Val::int64,
                     f16 = Dtype::Val::float16, f32 = Dtype::Val::float32,
                     f64 = Dtype::Val::float64, bf = Dtype::Val::bfloat16,
                     c64 = Dtype::Val::complex64;

// Indexed by Dtype::Val order: b u8 u16 u32 u64 i8 i16 i32 i64 f16 f32 f64 bf16 c64.
constexpr Dtype::Val kPromote[kNumDtypes][kNumDtypes] = {
    {b, u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64, bf, c64},
    {u8, u8, u16, u32, u64, i16, i16, i32, i64, f16, f32, f64, bf, c64},
    {u16, u16, u16, u32, u64, i32, i32, i32, i64, f16, f32, f64, bf, c64},
    {u32, u32, u32, u32, u64, i64, i64, i64, i64, f16, f32, f64, bf, c64},
    {u64, u64, u64, u64, u64, f32, f32, f32, f32, f16, f32, f64, bf, c64},
    {i8, i16, i32, i64, f32, i8, i16, i32, i64, f16, f32, f64, bf, c64},
    {i16, i16, i32, i64, f32, i16, i16, i32, i64, f16, f32, f64, bf, c64},
    {i32, i32, i32, i64, f32, i32, i32, i32, i64, f16, f32, f64, bf, c64},
    {i64, i64, i64, i64, f32, i64, i64, i64, i64, f16, f32, f64, bf, c64},
    {f16, f16, f16, f16, f16, f16, f16, f16, f16, f16, f32, f64, f32, c64},
    {f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f64, f32, c64},
    {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, c64},
    {bf, bf, bf, bf, bf, bf, bf, bf, bf, f32, f32, f64, bf, c64},
    {c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64},
};

constexpr Dtype kAll[kNumDtypes] = {bool_, uint8, uint16,  uint32,  uint64,  int8,     int16,
                                    int32, int64, float16, float32, float64, bfloat16, complex64};

const char* kNames[kNumDtypes] = {"bool",    "uint8",   "uint16",   "uint32",   "uint64",
                                  "int8",    "int16",   "int32",    "int64",    "float16",
                                  "float32", "float64", "bfloat16", "complex64"};

Dtype from_val(Dtype::Val v) { return kAll[static_cast<int>(v)]; }

}  // namespace

Dtype promote_types(Dtype a, Dtype b) {
  return from_val(kPromote[static_cast<int>(a.val)][static_cast<int>(b.val)]);
}

Dtype::Kind kind(Dtype dt) {
  switch (dt.val) {
    case Dtype::Val::bool_:
      return Dtype::Kind::b;
    case Dtype::Val::uint8:
    case Dtype::Val::uint16:
    case Dtype::Val::uint32:
    case Dtype::Val::uint64:
      return Dtype::Kind::u;
    case Dtype::Val::int8:
    case Dtype::Val::int16:
    case Dtype::Val::int32:
    case Dtype::Val::int64:
      return Dtype::Kind::i;
    case Dtype::Val::float16:
    case Dtype::Val::float32:
    case Dtype::Val::float64:
      return Dtype::Kind::f;
    case Dtype::Val::bfloat16:
      return Dtype::Kind::V;
    case Dtype::Val::complex64:
      return Dtype::Kind::c;
  }
  return Dtype::Kind::b;
}

namespace {
DtypeCategory leaf_category(Dtype dt) {
  switch (kind(dt)) {
    case Dtype::Kind::c:
      return DtypeCategory::complexfloating;
    case Dtype::Kind::f:
    case Dtype::Kind::V:
      return DtypeCategory::floating;
    case Dtype::Kind::i:
      return DtypeCategory::signedinteger;
    case Dtype::Kind::u:
      return DtypeCategory::unsignedinteger;
    case Dtype::Kind::b:
      return DtypeCategory::generic;
  }
  return DtypeCategory::generic;
}
}  // namespace

bool issubdtype(DtypeCategory a, DtypeCategory b) {
  if (a == b || b == DtypeCategory::generic) {
    return true;
  }
  switch (b) {
    case DtypeCategory::number:
      return a != DtypeCategory::generic;
    case DtypeCategory::inexact:
      return a == DtypeCategory::floating || a == DtypeCategory::complexfloating;
    case DtypeCategory::integer:
      return a == DtypeCategory::signedinteger || a == DtypeCategory::unsignedinteger;
    default:
      return false;
  }
}

bool issubdtype(Dtype a, Dtype b) { return a == b; }
bool issubdtype(Dtype a, DtypeCategory cat) { return issubdtype(leaf_category(a), cat); }
bool issubdtype(DtypeCategory, Dtype) { return false; }

std::string dtype_name(Dtype dt) { return kNames[static_cast<int>(dt.val)]; }

Dtype dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDtypes; ++i) {
    if (name == kNames[i]) {
      return kAll[i];
    }
  }
  throw std::invalid_argument("[dtype] Unknown dtype name '" + name + "'.");
}

std::ostream& operator<<(std::ostream& os, Dtype dt) { return os << dtype_name(dt); }

std::ostream& operator<<(std::ostream& os, DtypeCategory cat) {
  static const char* names[] = {"complexfloating", "floating", "inexact", "signedinteger",
                                "unsignedinteger", "integer",  "number",  "generic"};
  return os << names[static_cast<int>(cat)];
}

namespace {
template <typename T>
void fill_finfo(finfo& f) {
  f.min = static_cast<double>(static_cast<float>(std::numeric_limits<T>::lowest()));
  f.max = static_cast<double>(static_cast<float>(std::numeric_limits<T>::max()));
  f.eps = static_cast<double>(static_cast<float>(std::numeric_limits<T>::epsilon()));
  f.tiny = static_cast<double>(static_cast<float>(std::numeric_limits<T>::min()));
}
}  // namespace

finfo::finfo(Dtype dt) : dtype(dt) {
  switch (dt.val) {
    case Dtype::Val::float16:
      fill_finfo<float16_t>(*this);
      break;
    case Dtype::Val::bfloat16:
      fill_finfo<bfloat16_t>(*this);
      break;
    case Dtype::Val::float32:
    case Dtype::Val::complex64:
      fill_finfo<float>(*this);
      dtype = float32;
      break;
    case Dtype::Val::float64:
      min = std::numeric_limits<double>::lowest();
      max = std::numeric_limits<double>::max();
      eps = std::numeric_limits<double>::epsilon();
      tiny = std::numeric_limits<double>::min();
      break;
    default:
      throw std::invalid_argument("[finfo] dtype " + dtype_name(dt) +
                                  " is not inexact; use iinfo for integer types.");
  }
}

namespace {
template <typename T>
void fill_iinfo(iinfo& info) {
  info.min = static_cast<int64_t>(std::numeric_limits<T>::min());
  info.max = static_cast<uint64_t>(std::numeric_limits<T>::max());
}
}  // namespace

iinfo::iinfo(Dtype dt) : dtype(dt) {
  switch (dt.val) {
    case Dtype::Val::uint8:
      fill_iinfo<uint8_t>(*this);
      break;
    case Dtype::Val::uint16:
      fill_iinfo<uint16_t>(*this);
      break;
    case Dtype::Val::uint32:
      fill_iinfo<uint32_t>(*this);
      break;
    case Dtype::Val::uint64:
      fill_iinfo<uint64_t>(*this);
      break;
    case Dtype::Val::int8:
      fill_iinfo<int8_t>(*this);
      break;
    case Dtype::Val::int16:
      fill_iinfo<int16_t>(*this);
      break;
    case Dtype::Val::int32:
      fill_iinfo<int32_t>(*this);
      break;
    case Dtype::Val::int64:
      fill_iinfo<int64_t>(*this);
      break;
    case Dtype::Val::bool_:
      fill_iinfo<bool>(*this);
      break;
    default:
      throw std::invalid_argument("[iinfo] dtype " + dtype_name(dt) +
                                  " is not an integer type; use finfo for floating types.");
  }
}

}  // namespace mlx::core
