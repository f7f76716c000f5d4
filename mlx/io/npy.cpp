#include "mlx/io/npy.h"

#include <algorithm>
#include <climits>
#include <optional>

#include "mlx/io/text_cursor.h"
#include "mlx/ops/creation.h"
#include "mlx/runtime/eval.h"
#include "mlx/utils.h"

namespace mlx::core::io::detail {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// NumPy itself refuses headers over 10000 bytes by default; legitimate ones are tiny.
constexpr uint32_t kMaxHeaderLen = 1 << 20;
constexpr int kMaxDims = 64;

// NumPy's type codes (after the byte-order character). bfloat16 has none: it is written as
// 2-byte raw records ('<V2'), which MLX reads back as bfloat16 and NumPy as opaque records.
constexpr std::pair<std::string_view, Dtype> kTypeCodes[] = {
    {"b1", bool_},   {"u1", uint8},   {"u2", uint16},    {"u4", uint32},  {"u8", uint64},
    {"i1", int8},    {"i2", int16},   {"i4", int32},     {"i8", int64},   {"f2", float16},
    {"f4", float32}, {"f8", float64}, {"c8", complex64}, {"V2", bfloat16}};

std::string descr_of(Dtype t) {
  for (auto& [code, dt] : kTypeCodes) {
    if (dt == t) {
      std::string descr(1, size_of(t) == 1 ? '|' : '<');
      return descr.append(code);
    }
  }
  throw std::invalid_argument("[save] Unsupported dtype " + dtype_name(t) + ".");
}

struct Descr {
  Dtype dtype;
  bool big_endian;
};

std::optional<Descr> parse_descr(std::string_view d) {
  bool big = false;
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    big = d[0] == '>';
    d.remove_prefix(1);
  }
  for (auto& [code, t] : kTypeCodes) {
    if (d == code) {
      return Descr{t, big && size_of(t) > 1};
    }
  }
  return std::nullopt;
}

struct NpyHeader {
  Descr descr{bool_, false};
  bool fortran = false;
  Shape shape;
};

// Parses the Python dict literal NumPy writes: {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), } with keys in any order, either quote style and optional trailing commas.
class HeaderParser : public TextCursor<HeaderParser> {
 public:
  HeaderParser(std::string_view s, const Context& ctx)
      : TextCursor(s, std::string_view(" \n\t\r\0", 5)), ctx_(ctx) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen[3] = {false, false, false};
    expect('{');
    while (!consume('}')) {
      std::string key = string_literal();
      expect(':');
      int k = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
      if (k < 0) {
        fail("unexpected key '" + key + "'");
      }
      if (seen[k]) {
        fail("duplicate key '" + key + "'");
      }
      seen[k] = true;
      if (k == 0) {
        h.descr = descr();
      } else if (k == 1) {
        h.fortran = boolean();
      } else {
        h.shape = shape();
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != s_.size()) {
      fail("unexpected text after the header dict");
    }
    const char* names[] = {"descr", "fortran_order", "shape"};
    for (int k = 0; k < 3; ++k) {
      if (!seen[k]) {
        fail(std::string("the header has no '") + names[k] + "'");
      }
    }
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) {
    ctx_.fail("bad header (" + problem + ") in " + std::string(s_.substr(0, 200)));
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) {
      fail("expected a string");
    }
    char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) {
        ++pos_;
      }
      out.push_back(s_[pos_++]);
    }
    if (pos_ >= s_.size()) {
      fail("unterminated string");
    }
    ++pos_;
    return out;
  }
  Descr descr() {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '[') {
      fail("structured dtypes are not supported");
    }
    std::string d = string_literal();
    auto parsed = parse_descr(d);
    if (!parsed) {
      fail("unsupported dtype '" + d + "'");
    }
    return *parsed;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (literal(word)) {
        return value;
      }
    }
    fail("fortran_order must be True or False");
  }
  Shape shape() {
    expect('(');
    Shape shape;
    while (!consume(')')) {
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == '-') {
        fail("negative dimension");
      }
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') {
        fail("expected a dimension");
      }
      int64_t d = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        d = d * 10 + (s_[pos_++] - '0');
        if (d > INT32_MAX) {
          fail("dimension larger than " + std::to_string(INT32_MAX));
        }
      }
      if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) {
        ++pos_;  // Python 2 longs
      }
      if (shape.size() == kMaxDims) {
        fail("more than " + std::to_string(kMaxDims) + " dimensions");
      }
      shape.push_back(static_cast<int32_t>(d));
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  const Context& ctx_;
  friend class TextCursor<HeaderParser>;
};

// Bytes of the array, or 0 with `overflow` set when they do not fit in 64 bits.
uint64_t checked_nbytes(const Shape& shape, Dtype t, bool& overflow) {
  uint64_t n = size_of(t);
  overflow = false;
  for (auto d : shape) {
    if (d != 0 && n > UINT64_MAX / static_cast<uint64_t>(d)) {
      overflow = true;
    }
    n *= static_cast<uint64_t>(d);
  }
  return overflow ? 0 : n;
}

template <typename T, typename Swap>
void swap_each(char* p, size_t n, Swap swap) {
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    v = swap(v);
    std::memcpy(p + i * sizeof(T), &v, sizeof(T));
  }
}

// Big-endian data to native order; complex numbers swap each of their two floats.
void byteswap(char* p, size_t nbytes, Dtype t) {
  size_t unit = t == complex64 ? 4 : size_of(t);
  size_t n = nbytes / unit;
  if (unit == 2) {
    swap_each<uint16_t>(p, n, [](uint16_t v) { return __builtin_bswap16(v); });
  } else if (unit == 4) {
    swap_each<uint32_t>(p, n, [](uint32_t v) { return __builtin_bswap32(v); });
  } else if (unit == 8) {
    swap_each<uint64_t>(p, n, [](uint64_t v) { return __builtin_bswap64(v); });
  }
}

Strides col_major_strides(const Shape& shape) {
  Strides strides(shape.size(), 1);
  for (size_t i = 1; i < shape.size(); ++i) {
    strides[i] = strides[i - 1] * std::max<int64_t>(shape[i - 1], 1);
  }
  return strides;
}

// A new evaluated array with its own (uninitialized) buffer, in C or Fortran order.
array allocate(const Shape& shape, Dtype t, bool fortran) {
  array out(shape, t, nullptr, {});
  size_t non_unit = std::count_if(shape.begin(), shape.end(), [](int d) { return d != 1; });
  array::Flags flags{};
  flags.contiguous = true;
  flags.row_contiguous = !fortran || out.size() <= 1 || non_unit <= 1;
  flags.col_contiguous = fortran || out.size() <= 1 || non_unit <= 1;
  out.set_data(allocator::malloc(out.nbytes()), out.size(),
               fortran ? col_major_strides(shape) : row_major_strides(shape), flags);
  return out;
}

}  // namespace

DenseArray dense_for_save(array a) {
  eval(a);
  auto& f = a.flags();
  if (a.ndim() > 1 && !f.row_contiguous && f.col_contiguous && f.contiguous &&
      a.data_size() == a.size()) {
    return {a, true};
  }
  a = contiguous(a);
  eval(a);
  return {a, false};
}

std::string npy_header(const DenseArray& d) {
  std::string dims;
  for (int i = 0; i < d.a.ndim(); ++i) {
    dims += std::to_string(d.a.shape(i)) + (d.a.ndim() == 1 ? "," : i + 1 < d.a.ndim() ? ", " : "");
  }
  std::string dict = "{'descr': '" + descr_of(d.a.dtype()) +
                     "', 'fortran_order': " + (d.fortran ? "True" : "False") + ", 'shape': (" +
                     dims + "), }";
  // The total is padded to a multiple of 64; version 1.0 has a 2-byte header length.
  auto padded = [&](size_t prefix) { return (prefix + dict.size() + 1 + 63) / 64 * 64; };
  bool v1 = padded(10) - 10 <= 65535;
  size_t prefix = v1 ? 10 : 12;
  size_t total = padded(prefix);
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(v1 ? 1 : 2);
  out.push_back(0);
  put_le(out, dict.size(), v1 ? 2 : 4);
  return out + dict;
}

array read_npy(ByteSource& src, const Context& ctx, bool exact) {
  char pre[12];
  if (src.remaining() < 10) {
    ctx.fail("too short for a .npy header (" + std::to_string(src.remaining()) + " bytes)");
  }
  src.read(pre, 8);
  if (std::memcmp(pre, kMagic, kMagicLen) != 0) {
    ctx.fail("no .npy magic string at the start");
  }
  int major = static_cast<unsigned char>(pre[6]);
  int minor = static_cast<unsigned char>(pre[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    ctx.fail("unsupported .npy format version " + std::to_string(major) + "." +
             std::to_string(minor));
  }
  size_t len_bytes = major == 1 ? 2 : 4;
  if (src.remaining() < len_bytes) {
    ctx.fail("too short for a .npy header");
  }
  src.read(pre + 8, len_bytes);
  uint32_t header_len = major == 1 ? get_u16(pre + 8) : get_u32(pre + 8);
  if (header_len > kMaxHeaderLen || header_len > src.remaining()) {
    ctx.fail("header length " + std::to_string(header_len) + " exceeds the " +
             std::to_string(src.remaining()) + " bytes that follow");
  }
  std::string text(header_len, '\0');
  src.read(text.data(), header_len);
  NpyHeader h = HeaderParser(text, ctx).parse();

  bool overflow;
  uint64_t nbytes = checked_nbytes(h.shape, h.descr.dtype, overflow);
  if (overflow || nbytes > src.remaining() || (exact && nbytes != src.remaining())) {
    ctx.fail("shape " + to_string(h.shape) + " of " + dtype_name(h.descr.dtype) + " needs " +
             (overflow ? std::string("more than 2^64") : std::to_string(nbytes)) +
             " bytes of data but " + std::to_string(src.remaining()) + " follow the header");
  }
  array out = allocate(h.shape, h.descr.dtype, h.fortran);
  char* data = out.data<char>();
  src.read(data, nbytes);
  src.finish();
  if (h.descr.big_endian) {
    byteswap(data, nbytes, h.descr.dtype);
  }
  if (h.descr.dtype == bool_) {
    normalize_bool(data, nbytes);
  }
  return out;
}

}  // namespace mlx::core::io::detail
