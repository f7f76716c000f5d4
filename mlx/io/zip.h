// The zip container of .npz files: reading the central directory (zip64 included) and writing
// stored or deflated members. Internal.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mlx/io/detail.h"

namespace mlx::core::io::detail {

// Sizes and offsets from this value up need the zip64 extensions.
inline constexpr uint64_t kZip64Limit = 0xFFFFFFFF;

struct ZipEntry {
  std::string name;
  uint16_t method;  // 0 stored, 8 deflated
  uint32_t crc;
  uint64_t compressed_size;
  uint64_t uncompressed_size;
  uint64_t data_offset;  // first byte of the member's data, past its local header
};

// The archive's members, every field checked against the file's size.
std::vector<ZipEntry> read_zip_directory(Reader& in, const Context& ctx);

// The uncompressed bytes of `e`; the CRC-32 is checked by ByteSource::finish().
std::unique_ptr<ByteSource> open_zip_entry(Reader& in, const ZipEntry& e, const Context& ctx);

class ZipWriter {
 public:
  // `zip64_limit` only changes for tests, which cannot write 4 GiB files.
  explicit ZipWriter(Writer& out, uint64_t zip64_limit = kZip64Limit)
      : out_(out), limit_(zip64_limit) {}
  // Adds a member whose content is the concatenation of `parts`.
  void add(const std::string& name, const std::vector<std::string_view>& parts, bool compress);
  // Writes the central directory and the end records.
  void finish();

 private:
  struct Member {
    std::string name;
    uint16_t method;
    uint16_t flags;
    uint32_t crc;
    uint64_t compressed_size;
    uint64_t uncompressed_size;
    uint64_t offset;
  };
  void emit(std::string_view bytes);
  // Deflates `parts` to the output; returns the compressed size.
  uint64_t deflate_parts(const std::vector<std::string_view>& parts);

  Writer& out_;
  uint64_t limit_;
  uint64_t offset_ = 0;
  std::vector<Member> members_;
};

}  // namespace mlx::core::io::detail
