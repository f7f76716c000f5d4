#include "mlx/io/zip.h"

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace mlx::core::io::detail {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr uint32_t kDescriptorSig = 0x08074b50;
constexpr size_t kLocalLen = 30;
constexpr size_t kCentralLen = 46;
constexpr size_t kEndLen = 22;
constexpr size_t kEnd64Len = 56;
constexpr size_t kEnd64LocatorLen = 20;
constexpr uint16_t kZip64ExtraId = 0x0001;
// Deflate cannot expand data more than 1032 times (a 258-byte match per 2 bits); a larger
// declared size is a lie that would only make us allocate memory.
constexpr uint64_t kMaxInflateRatio = 1032;
// DOS date 1980-01-01, time 00:00: fixed so that equal arrays give equal files.
constexpr uint16_t kDosDate = (1 << 5) | 1;
constexpr uint16_t kDosTime = 0;

std::string read_bytes(Reader& in, uint64_t offset, size_t n) {
  std::string s(n, '\0');
  in.read(s.data(), n, offset);
  return s;
}

// Resolves the 0xFFFFFFFF placeholders of a central directory record from its zip64 extra.
void apply_zip64_extra(std::string_view extra, ZipEntry& e, uint64_t& local_offset, bool need[3],
                       const Context& ctx) {
  uint64_t* fields[3] = {&e.uncompressed_size, &e.compressed_size, &local_offset};
  size_t pos = 0;
  while (pos + 4 <= extra.size()) {
    uint16_t id = get_u16(extra.data() + pos);
    uint16_t len = get_u16(extra.data() + pos + 2);
    pos += 4;
    if (len > extra.size() - pos) {
      ctx.fail("entry '" + e.name + "' has a malformed extra field");
    }
    if (id == kZip64ExtraId) {
      size_t p = pos;
      for (int k = 0; k < 3; ++k) {
        if (need[k]) {
          if (p + 8 > pos + len) {
            ctx.fail("entry '" + e.name + "' has a truncated zip64 extra field");
          }
          *fields[k] = get_u64(extra.data() + p);
          p += 8;
          need[k] = false;
        }
      }
    }
    pos += len;
  }
  if (need[0] || need[1] || need[2]) {
    ctx.fail("entry '" + e.name + "' needs a zip64 extra field it does not have");
  }
}

}  // namespace

std::vector<ZipEntry> read_zip_directory(Reader& in, const Context& ctx) {
  uint64_t size = in.size();
  if (size < kEndLen) {
    ctx.fail("too short for a zip archive (" + std::to_string(size) + " bytes)");
  }
  // The end record sits in the last 22 bytes plus an archive comment of up to 65535 bytes.
  size_t tail_len = static_cast<size_t>(std::min<uint64_t>(size, kEndLen + 0xFFFF));
  uint64_t tail_start = size - tail_len;
  std::string tail = read_bytes(in, tail_start, tail_len);
  size_t end = std::string::npos;
  for (size_t i = tail_len - kEndLen + 1; i-- > 0;) {
    if (get_u32(tail.data() + i) == kEndSig &&
        i + kEndLen + get_u16(tail.data() + i + 20) <= tail_len) {
      end = i;
      break;
    }
  }
  if (end == std::string::npos) {
    ctx.fail("no zip end-of-central-directory record (not a zip archive, or truncated)");
  }
  const char* r = tail.data() + end;
  uint64_t end_pos = tail_start + end;
  uint16_t disk = get_u16(r + 4);
  uint16_t cd_disk = get_u16(r + 6);
  uint64_t count = get_u16(r + 10);
  uint64_t cd_size = get_u32(r + 12);
  uint64_t cd_offset = get_u32(r + 16);
  uint64_t cd_limit = end_pos;  // the directory ends before the end records
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    if (end_pos < kEnd64LocatorLen) {
      ctx.fail("zip64 end-of-central-directory locator is missing");
    }
    std::string loc = read_bytes(in, end_pos - kEnd64LocatorLen, kEnd64LocatorLen);
    uint64_t rec_pos = get_u64(loc.data() + 8);
    if (get_u32(loc.data()) != kEnd64LocatorSig || rec_pos > end_pos - kEnd64LocatorLen ||
        end_pos - kEnd64LocatorLen - rec_pos < kEnd64Len) {
      ctx.fail("zip64 end-of-central-directory locator is missing or points outside the file");
    }
    std::string rec = read_bytes(in, rec_pos, kEnd64Len);
    if (get_u32(rec.data()) != kEnd64Sig) {
      ctx.fail("zip64 end-of-central-directory record is missing");
    }
    disk = static_cast<uint16_t>(std::min<uint32_t>(get_u32(rec.data() + 16), 0xFFFF));
    cd_disk = static_cast<uint16_t>(std::min<uint32_t>(get_u32(rec.data() + 20), 0xFFFF));
    count = get_u64(rec.data() + 32);
    cd_size = get_u64(rec.data() + 40);
    cd_offset = get_u64(rec.data() + 48);
    cd_limit = rec_pos;
  }
  if (disk != 0 || cd_disk != 0) {
    ctx.fail("multi-disk zip archives are not supported");
  }
  if (cd_offset > cd_limit || cd_size > cd_limit - cd_offset) {
    ctx.fail("central directory (offset " + std::to_string(cd_offset) + ", " +
             std::to_string(cd_size) + " bytes) lies outside the file");
  }
  if (count > cd_size / kCentralLen) {
    ctx.fail("central directory of " + std::to_string(cd_size) + " bytes cannot hold " +
             std::to_string(count) + " entries");
  }
  std::string cd = read_bytes(in, cd_offset, static_cast<size_t>(cd_size));

  std::vector<ZipEntry> entries;
  entries.reserve(static_cast<size_t>(count));
  size_t pos = 0;
  for (uint64_t k = 0; k < count; ++k) {
    if (cd.size() - pos < kCentralLen || get_u32(cd.data() + pos) != kCentralSig) {
      ctx.fail("central directory entry " + std::to_string(k) + " is malformed");
    }
    const char* c = cd.data() + pos;
    uint16_t flags = get_u16(c + 8);
    size_t name_len = get_u16(c + 28);
    size_t extra_len = get_u16(c + 30);
    size_t comment_len = get_u16(c + 32);
    if (cd.size() - pos - kCentralLen < name_len + extra_len + comment_len) {
      ctx.fail("central directory entry " + std::to_string(k) + " runs past the directory");
    }
    ZipEntry e;
    e.name.assign(c + kCentralLen, name_len);
    e.method = get_u16(c + 10);
    e.crc = get_u32(c + 16);
    e.compressed_size = get_u32(c + 20);
    e.uncompressed_size = get_u32(c + 24);
    uint64_t local = get_u32(c + 42);
    bool need[3] = {e.uncompressed_size == 0xFFFFFFFF, e.compressed_size == 0xFFFFFFFF,
                    local == 0xFFFFFFFF};
    if (need[0] || need[1] || need[2]) {
      apply_zip64_extra(std::string_view(c + kCentralLen + name_len, extra_len), e, local, need,
                        ctx);
    }
    pos += kCentralLen + name_len + extra_len + comment_len;

    if (flags & 1) {
      ctx.fail("entry '" + e.name + "' is encrypted");
    }
    if (e.method != 0 && e.method != 8) {
      ctx.fail("entry '" + e.name + "' uses unsupported compression method " +
               std::to_string(e.method));
    }
    if (e.method == 0 && e.compressed_size != e.uncompressed_size) {
      ctx.fail("stored entry '" + e.name + "' has different compressed and uncompressed sizes");
    }
    if (e.method == 8 && e.uncompressed_size / kMaxInflateRatio > e.compressed_size + 1) {
      ctx.fail("entry '" + e.name + "' claims " + std::to_string(e.uncompressed_size) +
               " bytes from " + std::to_string(e.compressed_size) +
               " compressed bytes, more than deflate can produce");
    }
    if (local > cd_offset || cd_offset - local < kLocalLen) {
      ctx.fail("entry '" + e.name + "' has a local header outside the file");
    }
    std::string lh = read_bytes(in, local, kLocalLen);
    if (get_u32(lh.data()) != kLocalSig) {
      ctx.fail("entry '" + e.name + "' has no local header signature");
    }
    uint64_t data = local + kLocalLen + get_u16(lh.data() + 26) + get_u16(lh.data() + 28);
    if (data > cd_offset || e.compressed_size > cd_offset - data) {
      ctx.fail("entry '" + e.name + "' has data outside the file");
    }
    e.data_offset = data;
    entries.push_back(std::move(e));
  }
  return entries;
}

std::unique_ptr<ByteSource> open_zip_entry(Reader& in, const ZipEntry& e, const Context& ctx) {
  if (e.method == 0) {
    return std::make_unique<RegionSource>(in, e.data_offset, e.uncompressed_size, ctx, &e.crc);
  }
  return std::make_unique<InflateSource>(in, e.data_offset, e.compressed_size, e.uncompressed_size,
                                         e.crc, ctx);
}

void ZipWriter::emit(std::string_view bytes) {
  out_.write(bytes.data(), bytes.size());
  offset_ += bytes.size();
}

uint64_t ZipWriter::deflate_parts(const std::vector<std::string_view>& parts) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("[savez_compressed] zlib failed to initialize.");
  }
  std::vector<char> buf(1 << 18);
  uint64_t written = 0;
  // Runs deflate until it has taken all its input (or, finishing, ended the stream).
  auto drain = [&](int flush) {
    int rc;
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf.data());
      zs.avail_out = static_cast<uInt>(buf.size());
      rc = deflate(&zs, flush);
      if (rc == Z_STREAM_ERROR) {
        throw std::runtime_error("[savez_compressed] zlib failed to compress.");
      }
      size_t got = buf.size() - zs.avail_out;
      emit(std::string_view(buf.data(), got));
      written += got;
    } while (flush == Z_FINISH ? rc != Z_STREAM_END : zs.avail_out == 0);
  };
  try {
    for (auto rest : parts) {
      while (!rest.empty()) {
        size_t len = std::min<size_t>(rest.size(), 1u << 30);
        zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(rest.data()));
        zs.avail_in = static_cast<uInt>(len);
        rest.remove_prefix(len);
        drain(Z_NO_FLUSH);
      }
    }
    drain(Z_FINISH);
  } catch (...) {
    deflateEnd(&zs);
    throw;
  }
  deflateEnd(&zs);
  return written;
}

void ZipWriter::add(const std::string& name, const std::vector<std::string_view>& parts,
                    bool compress) {
  if (name.size() > 0xFFFF) {
    throw std::invalid_argument("[savez] Array name of " + std::to_string(name.size()) +
                                " bytes is too long for a zip archive.");
  }
  // Flag bit 3: sizes and CRC follow the data; bit 11: the name is UTF-8 (not code page 437).
  bool ascii = std::all_of(name.begin(), name.end(), [](char c) { return (c & 0x80) == 0; });
  uint16_t flags = (compress ? 0x8 : 0) | (ascii ? 0 : 0x800);
  Member m{name, uint16_t(compress ? 8 : 0), flags, 0, 0, 0, offset_};
  for (auto p : parts) {
    m.uncompressed_size += p.size();
  }
  // Deflated data can be slightly larger than its input; the bound is generous.
  uint64_t worst = m.uncompressed_size + (compress ? m.uncompressed_size / 1000 + 1024 : 0);
  bool zip64 = worst >= limit_;
  if (!compress) {
    for (auto p : parts) {
      m.crc = crc32_of(m.crc, p.data(), p.size());
    }
    m.compressed_size = m.uncompressed_size;
  }
  // Deflated members are streamed, with a data descriptor after them.
  std::string h;
  put_le(h, kLocalSig, 4);
  put_le(h, zip64 ? 45 : 20, 2);
  put_le(h, m.flags, 2);
  put_le(h, m.method, 2);
  put_le(h, kDosTime, 2);
  put_le(h, kDosDate, 2);
  put_le(h, m.crc, 4);
  put_le(h, zip64 ? 0xFFFFFFFF : m.compressed_size, 4);
  put_le(h, zip64 ? 0xFFFFFFFF : m.uncompressed_size, 4);
  put_le(h, name.size(), 2);
  put_le(h, zip64 ? 20 : 0, 2);
  h += name;
  if (zip64) {
    put_le(h, kZip64ExtraId, 2);
    put_le(h, 16, 2);
    put_le(h, m.uncompressed_size, 8);
    put_le(h, m.compressed_size, 8);
  }
  emit(h);
  if (!compress) {
    for (auto p : parts) {
      emit(p);
    }
  } else {
    m.compressed_size = deflate_parts(parts);
    for (auto p : parts) {
      m.crc = crc32_of(m.crc, p.data(), p.size());
    }
    std::string d;
    put_le(d, kDescriptorSig, 4);
    put_le(d, m.crc, 4);
    put_le(d, m.compressed_size, zip64 ? 8 : 4);
    put_le(d, m.uncompressed_size, zip64 ? 8 : 4);
    emit(d);
  }
  members_.push_back(std::move(m));
}

void ZipWriter::finish() {
  uint64_t cd_offset = offset_;
  for (auto& m : members_) {
    std::string extra;
    auto field = [&](uint64_t v) -> uint64_t {
      if (v < limit_) {
        return v;
      }
      put_le(extra, v, 8);
      return 0xFFFFFFFF;
    };
    uint64_t usize = field(m.uncompressed_size);
    uint64_t csize = field(m.compressed_size);
    uint64_t offset = field(m.offset);
    bool zip64 = !extra.empty();
    std::string c;
    put_le(c, kCentralSig, 4);
    put_le(c, (3 << 8) | (zip64 ? 45 : 20), 2);  // made by: Unix
    put_le(c, zip64 ? 45 : 20, 2);
    put_le(c, m.flags, 2);
    put_le(c, m.method, 2);
    put_le(c, kDosTime, 2);
    put_le(c, kDosDate, 2);
    put_le(c, m.crc, 4);
    put_le(c, csize, 4);
    put_le(c, usize, 4);
    put_le(c, m.name.size(), 2);
    put_le(c, zip64 ? extra.size() + 4 : 0, 2);
    put_le(c, 0, 2);               // comment
    put_le(c, 0, 2);               // disk
    put_le(c, 0, 2);               // internal attributes
    put_le(c, 0100644u << 16, 4);  // a regular file, rw-r--r--
    put_le(c, offset, 4);
    c += m.name;
    if (zip64) {
      put_le(c, kZip64ExtraId, 2);
      put_le(c, extra.size(), 2);
      c += extra;
    }
    emit(c);
  }
  uint64_t cd_size = offset_ - cd_offset;
  uint64_t count = members_.size();
  bool zip64 =
      count >= std::min<uint64_t>(limit_, 0xFFFF) || cd_size >= limit_ || cd_offset >= limit_;
  std::string e;
  if (zip64) {
    uint64_t rec_pos = offset_;
    put_le(e, kEnd64Sig, 4);
    put_le(e, kEnd64Len - 12, 8);
    put_le(e, (3 << 8) | 45, 2);
    put_le(e, 45, 2);
    put_le(e, 0, 4);
    put_le(e, 0, 4);
    put_le(e, count, 8);
    put_le(e, count, 8);
    put_le(e, cd_size, 8);
    put_le(e, cd_offset, 8);
    put_le(e, kEnd64LocatorSig, 4);
    put_le(e, 0, 4);
    put_le(e, rec_pos, 8);
    put_le(e, 1, 4);
  }
  put_le(e, kEndSig, 4);
  put_le(e, 0, 2);
  put_le(e, 0, 2);
  put_le(e, zip64 ? 0xFFFF : count, 2);
  put_le(e, zip64 ? 0xFFFF : count, 2);
  put_le(e, zip64 ? 0xFFFFFFFF : cd_size, 4);
  put_le(e, zip64 ? 0xFFFFFFFF : cd_offset, 4);
  put_le(e, 0, 2);
  emit(e);
  out_.flush();
}

}  // namespace mlx::core::io::detail
