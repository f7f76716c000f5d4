#include "mlx/primitives/serialize.h"

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "mlx/primitives/primitive.h"

namespace mlx::core {

void Primitive::write_state(serial::StateWriter&) const {
  throw std::invalid_argument(std::string("[export_function] ") + name() +
                              " cannot be exported (it has no MLX_SERIALIZABLE state).");
}

namespace serial {

void StateWriter::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    u8(static_cast<uint8_t>(v >> (8 * i)));
  }
}

void StateWriter::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    u8(static_cast<uint8_t>(v >> (8 * i)));
  }
}

void StateWriter::f64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  u64(bits);
}

void StateWriter::str(std::string_view s) {
  u32(static_cast<uint32_t>(s.size()));
  bytes_.append(s.data(), s.size());
}

void StateReader::fail(const std::string& problem) const {
  throw std::runtime_error(context_ + ": " + problem + " (at byte " + std::to_string(pos_) + ").");
}

const char* StateReader::take(size_t n) {
  if (n > remaining()) {
    fail("truncated: " + std::to_string(n) + " bytes needed, " + std::to_string(remaining()) +
         " left");
  }
  const char* p = data_.data() + pos_;
  pos_ += n;
  return p;
}

uint8_t StateReader::u8() { return static_cast<uint8_t>(*take(1)); }

uint32_t StateReader::u32() {
  const auto* b = reinterpret_cast<const unsigned char*>(take(4));
  return static_cast<uint32_t>(b[0]) | (static_cast<uint32_t>(b[1]) << 8) |
         (static_cast<uint32_t>(b[2]) << 16) | (static_cast<uint32_t>(b[3]) << 24);
}

uint64_t StateReader::u64() {
  uint64_t lo = u32();
  uint64_t hi = u32();
  return lo | (hi << 32);
}

double StateReader::f64() {
  uint64_t bits = u64();
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

std::string StateReader::str() {
  uint32_t n = u32();
  const char* p = take(n);
  return std::string(p, n);
}

size_t StateReader::count(size_t min_item_bytes) {
  uint32_t n = u32();
  if (static_cast<uint64_t>(n) * min_item_bytes > remaining()) {
    fail("a count of " + std::to_string(n) + " items exceeds the " + std::to_string(remaining()) +
         " bytes left");
  }
  return n;
}

Dtype Codec<Dtype>::get(StateReader& r) {
  static constexpr Dtype all[] = {bool_, uint8, uint16,  uint32,  uint64,  int8,     int16,
                                  int32, int64, float16, float32, float64, bfloat16, complex64};
  static_assert(sizeof(all) / sizeof(all[0]) == kNumDtypes);
  uint8_t v = r.u8();
  for (auto& d : all) {
    if (static_cast<uint8_t>(d.val) == v) {
      return d;
    }
  }
  r.fail("unknown dtype code " + std::to_string(v));
}

namespace {
struct Registry {
  std::mutex mutex;
  std::unordered_map<std::string, Factory> factories;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: used from static initializers
  return *r;
}
}  // namespace

bool register_factory(const char* name, Factory factory) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories.emplace(name, factory);
  return true;
}

Factory find_factory(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.factories.find(name);
  return it == r.factories.end() ? nullptr : it->second;
}

}  // namespace serial
}  // namespace mlx::core
