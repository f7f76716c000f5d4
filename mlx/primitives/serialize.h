// How a primitive is written to and rebuilt from an exported file: one closed interface.
//
// A primitive that can be exported says, in its class body,
//   MLX_SERIALIZABLE(Class, field_a_, field_b_)
// which lists exactly the arguments its constructor takes after the stream. The macro
// defines state() (those values as a tuple), write_state() (the class name then each value)
// and registers a factory that reads the values back and calls the constructor, so writing
// and reading can never disagree. Enum fields are wrapped, MLX_ENUM(field_, LastValue), so a
// value read from a file is range-checked; a field added to a primitive after files were
// written goes last, wrapped MLX_TRAILING(field_) (left out while it holds its default). A
// primitive without the macro cannot be exported (write_state's default throws naming it).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

class Primitive;

namespace serial {

// Little-endian bytes, appended.
class StateWriter {
 public:
  void u8(uint8_t v) { bytes_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v);
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v);
  void str(std::string_view s);
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

// Reads what StateWriter wrote from untrusted bytes: every read is bounds-checked and a
// failure throws std::runtime_error("<context>: <problem>").
class StateReader {
 public:
  StateReader(std::string_view data, std::string context)
      : data_(data), context_(std::move(context)) {}
  uint8_t u8();
  uint32_t u32();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  double f64();
  std::string str();
  // A count of items that each take at least `min_item_bytes`, checked against what is left
  // (so a hostile count cannot make the caller allocate more than the input backs).
  size_t count(size_t min_item_bytes = 1);
  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  [[noreturn]] void fail(const std::string& problem) const;

 private:
  const char* take(size_t n);
  std::string_view data_;
  size_t pos_ = 0;
  std::string context_;
};

// An enum field whose values run from 0 to Last.
template <class E, E Last>
struct EnumField {
  E value;
  operator E() const { return value; }
};

// A last field that files written before it existed do not have: left out when it holds
// T{}, and read as T{} when the primitive's bytes end before it. So primitives that do not use
// it are written as before, and older files still load.
template <class T>
struct TrailingField {
  T value;
  operator T() const { return value; }
};

// Codec<T>::put writes a parameter, get reads it back checked (conv.h adds ConvParams).
template <class T, class = void>
struct Codec;

template <>
struct Codec<bool> {
  static void put(StateWriter& w, bool v) { w.u8(v ? 1 : 0); }
  static bool get(StateReader& r) {
    uint8_t v = r.u8();
    if (v > 1) {
      r.fail("a boolean field holds " + std::to_string(v));
    }
    return v == 1;
  }
};

template <class T>
struct Codec<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static void put(StateWriter& w, T v) { w.i64(static_cast<int64_t>(v)); }
  static T get(StateReader& r) {
    int64_t v = r.i64();
    if constexpr (std::is_unsigned_v<T>) {
      if (v < 0 || static_cast<uint64_t>(v) > std::numeric_limits<T>::max()) {
        r.fail("an integer field holds " + std::to_string(v) + ", out of its range");
      }
    } else {
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
        r.fail("an integer field holds " + std::to_string(v) + ", out of its range");
      }
    }
    return static_cast<T>(v);
  }
};

template <class T>
struct Codec<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static void put(StateWriter& w, T v) { w.f64(static_cast<double>(v)); }
  static T get(StateReader& r) { return static_cast<T>(r.f64()); }
};

template <class E, E Last>
struct Codec<EnumField<E, Last>> {
  static void put(StateWriter& w, EnumField<E, Last> v) { w.i64(static_cast<int64_t>(v.value)); }
  static EnumField<E, Last> get(StateReader& r) {
    int64_t v = r.i64();
    if (v < 0 || v > static_cast<int64_t>(Last)) {
      r.fail("an enum field holds " + std::to_string(v) + ", outside 0.." +
             std::to_string(static_cast<int64_t>(Last)));
    }
    return {static_cast<E>(v)};
  }
};

template <>
struct Codec<Dtype> {
  static void put(StateWriter& w, Dtype v) { w.u8(static_cast<uint8_t>(v.val)); }
  static Dtype get(StateReader& r);
};

template <class T>
struct Codec<TrailingField<T>> {
  static void put(StateWriter& w, const TrailingField<T>& v) {
    if (v.value != T{}) {
      Codec<T>::put(w, v.value);
    }
  }
  static TrailingField<T> get(StateReader& r) {
    return {r.remaining() == 0 ? T{} : Codec<T>::get(r)};
  }
};

template <class T>
struct Codec<std::vector<T>> {
  static void put(StateWriter& w, const std::vector<T>& v) {
    w.u32(static_cast<uint32_t>(v.size()));
    for (auto& x : v) {
      Codec<T>::put(w, x);
    }
  }
  static std::vector<T> get(StateReader& r) {
    size_t n = r.count();
    std::vector<T> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      out.push_back(Codec<T>::get(r));
    }
    return out;
  }
};

template <class T>
struct Codec<std::optional<T>> {
  static void put(StateWriter& w, const std::optional<T>& v) {
    w.u8(v ? 1 : 0);
    if (v) {
      Codec<T>::put(w, *v);
    }
  }
  static std::optional<T> get(StateReader& r) {
    if (Codec<bool>::get(r)) {
      return Codec<T>::get(r);
    }
    return std::nullopt;
  }
};

template <class Tuple, size_t... I>
Tuple read_tuple(StateReader& r, std::index_sequence<I...>) {
  // Braced initialization reads the fields left to right.
  return Tuple{Codec<std::tuple_element_t<I, Tuple>>::get(r)...};
}

using Factory = std::shared_ptr<Primitive> (*)(Stream, StateReader&);
bool register_factory(const char* name, Factory factory);
// nullptr for a name no primitive registered.
Factory find_factory(const std::string& name);

template <class P>
std::shared_ptr<Primitive> make_primitive(Stream s, StateReader& r) {
  using State = decltype(std::declval<const P&>().state());
  State state = read_tuple<State>(r, std::make_index_sequence<std::tuple_size_v<State>>{});
  return std::apply([&](auto&&... a) { return std::make_shared<P>(s, a...); }, state);
}

template <class P>
struct Registration {
  static inline const bool registered = register_factory(P::kSerialName, &make_primitive<P>);
};

template <class P>
void write_primitive(StateWriter& w, const P& p) {
  (void)Registration<P>::registered;
  w.str(P::kSerialName);
  std::apply([&](const auto&... v) { (Codec<std::decay_t<decltype(v)>>::put(w, v), ...); },
             p.state());
}

}  // namespace serial

#define MLX_ENUM(field, last) \
  ::mlx::core::serial::EnumField<decltype(field), decltype(field)::last> { field }

// The last field only (see TrailingField).
#define MLX_TRAILING(field) \
  ::mlx::core::serial::TrailingField<decltype(field)> { field }

// In a primitive's class body: the constructor's arguments after the stream, in order.
#define MLX_SERIALIZABLE(Class, ...)                                     \
  static constexpr const char* kSerialName = #Class;                     \
  auto state() const { return std::make_tuple(__VA_ARGS__); }            \
  void write_state(::mlx::core::serial::StateWriter& w) const override { \
    ::mlx::core::serial::write_primitive<Class>(w, *this);               \
  }

}  // namespace mlx::core
