#include "mlx/io/detail.h"

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace mlx::core::io::detail {

void Context::fail(const std::string& problem) const {
  std::string where = member.empty() ? "" : " (member '" + member + "')";
  throw std::runtime_error("[" + op + "] Invalid " + kind + " file '" + label + "'" + where + ": " +
                           problem + ".");
}

std::string with_extension(std::string file, const std::string& ext) {
  if (file.size() < ext.size() || file.compare(file.size() - ext.size(), ext.size(), ext) != 0) {
    file += ext;
  }
  return file;
}

namespace {
template <typename Stream>
std::shared_ptr<Stream> open_file(const std::string& op, const std::string& path) {
  try {
    return std::make_shared<Stream>(path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("[" + op + "] " + e.what());
  }
}
}  // namespace

std::shared_ptr<Reader> open_reader(const std::string& op, const std::string& path) {
  return open_file<FileReader>(op, path);
}

std::shared_ptr<Writer> open_writer(const std::string& op, const std::string& path) {
  return open_file<FileWriter>(op, path);
}

void normalize_bool(char* data, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    data[i] = data[i] != 0;
  }
}

uint32_t crc32_of(uint32_t crc, const char* data, size_t n) {
  constexpr size_t kStep = size_t(1) << 30;
  while (n > 0) {
    size_t len = std::min(n, kStep);
    crc = static_cast<uint32_t>(
        crc32(crc, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(len)));
    data += len;
    n -= len;
  }
  return crc;
}

RegionSource::RegionSource(Reader& in, uint64_t offset, uint64_t length, const Context& ctx,
                           const uint32_t* expected_crc)
    : in_(in), pos_(offset), ctx_(ctx), check_crc_(expected_crc != nullptr) {
  uint64_t size = in.size();
  if (offset > size || length > size - offset) {
    ctx.fail("data at offset " + std::to_string(offset) + " of length " + std::to_string(length) +
             " extends past the end of the file (" + std::to_string(size) + " bytes)");
  }
  remaining_ = length;
  if (check_crc_) {
    expected_crc_ = *expected_crc;
  }
}

void RegionSource::read(char* data, size_t n) {
  if (n > remaining_) {
    ctx_.fail("unexpected end of data: need " + std::to_string(n) + " more bytes, " +
              std::to_string(remaining_) + " left");
  }
  in_.read(data, n, pos_);
  if (check_crc_) {
    crc_ = crc32_of(crc_, data, n);
  }
  pos_ += n;
  remaining_ -= n;
}

void RegionSource::finish() {
  if (check_crc_ && crc_ != expected_crc_) {
    ctx_.fail("CRC-32 mismatch (the data is corrupt)");
  }
}

InflateSource::InflateSource(Reader& in, uint64_t offset, uint64_t compressed,
                             uint64_t uncompressed, uint32_t crc, const Context& ctx)
    : in_(in), in_pos_(offset), in_left_(compressed), ctx_(ctx), expected_crc_(crc) {
  uint64_t size = in.size();
  if (offset > size || compressed > size - offset) {
    ctx.fail("compressed data extends past the end of the file");
  }
  remaining_ = uncompressed;
  if (inflateInit2(&zs_, -MAX_WBITS) != Z_OK) {
    throw std::runtime_error("[" + ctx.op + "] zlib failed to initialize.");
  }
  in_buf_.resize(static_cast<size_t>(std::min<uint64_t>(compressed, 1 << 20)));
}

InflateSource::~InflateSource() { inflateEnd(&zs_); }

size_t InflateSource::inflate_into(char* out, size_t n) {
  size_t produced = 0;
  while (produced < n && !ended_) {
    if (zs_.avail_in == 0 && in_left_ > 0) {
      size_t len = static_cast<size_t>(std::min<uint64_t>(in_left_, in_buf_.size()));
      in_.read(in_buf_.data(), len, in_pos_);
      in_pos_ += len;
      in_left_ -= len;
      zs_.next_in = reinterpret_cast<Bytef*>(in_buf_.data());
      zs_.avail_in = static_cast<uInt>(len);
    }
    uInt chunk = static_cast<uInt>(std::min<size_t>(n - produced, UINT_MAX));
    uInt avail_in = zs_.avail_in;
    zs_.next_out = reinterpret_cast<Bytef*>(out + produced);
    zs_.avail_out = chunk;
    int rc = inflate(&zs_, Z_NO_FLUSH);
    size_t got = chunk - zs_.avail_out;
    produced += got;
    if (rc == Z_STREAM_END) {
      ended_ = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      ctx_.fail(std::string("corrupt compressed data (zlib: ") +
                (zs_.msg != nullptr ? zs_.msg : "error") + ")");
    } else if (got == 0 && zs_.avail_in == avail_in) {
      ctx_.fail("compressed data ends before the declared size");
    }
  }
  return produced;
}

void InflateSource::read(char* data, size_t n) {
  if (n > remaining_) {
    ctx_.fail("unexpected end of data: need " + std::to_string(n) + " more bytes, " +
              std::to_string(remaining_) + " left");
  }
  if (inflate_into(data, n) < n) {
    ctx_.fail("compressed data ends before the declared size");
  }
  crc_ = crc32_of(crc_, data, n);
  remaining_ -= n;
}

void InflateSource::finish() {
  char extra;
  if (inflate_into(&extra, 1) != 0) {
    ctx_.fail("compressed data is longer than the declared size");
  }
  if (crc_ != expected_crc_) {
    ctx_.fail("CRC-32 mismatch (the data is corrupt)");
  }
}

}  // namespace mlx::core::io::detail
