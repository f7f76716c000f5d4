// Internals shared by the file formats: error context, little-endian fields, and sequential
// byte sources (a region of a reader, or a deflate stream inside one).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mlx/io/stream.h"

namespace mlx::core::io::detail {

// Who is reading what, for messages: "[load] Invalid .npz file 'a.npz' (member 'x.npy'):
// <problem>".
struct Context {
  std::string op;
  std::string kind;  // ".npy", ".npz", ".safetensors"
  std::string label;
  std::string member = {};  // the zip member being read, if any
  [[noreturn]] void fail(const std::string& problem) const;
};

inline uint16_t get_u16(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>(b[0] | (b[1] << 8));
}
inline uint32_t get_u32(const char* p) {
  return static_cast<uint32_t>(get_u16(p)) | (static_cast<uint32_t>(get_u16(p + 2)) << 16);
}
inline uint64_t get_u64(const char* p) {
  return static_cast<uint64_t>(get_u32(p)) | (static_cast<uint64_t>(get_u32(p + 4)) << 32);
}
// Appends `bytes` little-endian bytes of `v`.
inline void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
}

// `file`, with `ext` appended unless it already ends with it.
std::string with_extension(std::string file, const std::string& ext);
// Files opened with the caller's name ("[op] ...") on the error.
std::shared_ptr<Reader> open_reader(const std::string& op, const std::string& path);
std::shared_ptr<Writer> open_writer(const std::string& op, const std::string& path);
// Rejects null streams with std::invalid_argument.
template <typename Stream>
Stream& checked(const std::shared_ptr<Stream>& s, const std::string& op) {
  if (!s) {
    throw std::invalid_argument("[" + op + "] The stream is null.");
  }
  return *s;
}

// Makes every byte of bool data 0 or 1 (files may hold any nonzero value for True).
void normalize_bool(char* data, uint64_t n);

// CRC-32 of any length (zlib's interface takes 32-bit lengths).
uint32_t crc32_of(uint32_t crc, const char* data, size_t n);

// Sequential bytes of one payload whose length is known up front.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  uint64_t remaining() const { return remaining_; }
  // Reads exactly `n` bytes; fails through the context when fewer remain or data is corrupt.
  virtual void read(char* data, size_t n) = 0;
  // Checks what can only be checked at the end (checksums, the end of a deflate stream).
  virtual void finish() {}

 protected:
  uint64_t remaining_ = 0;
};

// `length` bytes of `in` from `offset`, optionally checked against a CRC-32 at the end.
class RegionSource : public ByteSource {
 public:
  RegionSource(Reader& in, uint64_t offset, uint64_t length, const Context& ctx,
               const uint32_t* expected_crc = nullptr);
  void read(char* data, size_t n) override;
  void finish() override;

 private:
  Reader& in_;
  uint64_t pos_;
  const Context& ctx_;
  bool check_crc_;
  uint32_t expected_crc_ = 0;
  uint32_t crc_ = 0;
};

// The raw-deflate stream in `compressed` bytes of `in` from `offset`, inflating to exactly
// `uncompressed` bytes with CRC-32 `crc`. Output never exceeds the declared size.
class InflateSource : public ByteSource {
 public:
  InflateSource(Reader& in, uint64_t offset, uint64_t compressed, uint64_t uncompressed,
                uint32_t crc, const Context& ctx);
  ~InflateSource() override;
  InflateSource(const InflateSource&) = delete;
  InflateSource& operator=(const InflateSource&) = delete;
  void read(char* data, size_t n) override;
  void finish() override;

 private:
  // Runs inflate until `n` bytes are in `out` (or the stream ends); returns the count.
  size_t inflate_into(char* out, size_t n);

  Reader& in_;
  uint64_t in_pos_;
  uint64_t in_left_;
  const Context& ctx_;
  uint32_t expected_crc_;
  uint32_t crc_ = 0;
  z_stream zs_{};
  bool ended_ = false;
  std::vector<char> in_buf_;
};

}  // namespace mlx::core::io::detail
