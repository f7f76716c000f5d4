// GGUF (llama.cpp's format), versions 2 and 3: a header (magic "GGUF", version, tensor and
// metadata counts), typed key-value metadata, tensor infos (name, dimensions innermost
// first, ggml type, offset), then the tensor data aligned to general.alignment (32 unless
// set). Everything declared is checked against the file before any tensor memory is
// allocated; the tensors read when evaluated (see io.h).
#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

#include "mlx/io/detail.h"
#include "mlx/io/io.h"
#include "mlx/io/lazy_load.h"
#include "mlx/ops/creation.h"
#include "mlx/runtime/eval.h"
#include "mlx/types/half_types.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace io::detail;

constexpr uint32_t kMagic = 0x46554747;  // "GGUF"
constexpr uint32_t kDefaultAlignment = 32;
constexpr uint64_t kMaxString = uint64_t(1) << 30;
constexpr uint32_t kMaxDims = 8;
constexpr int kGroup = 32;  // elements per Q4_0 / Q4_1 / Q8_0 block

enum ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

// Numeric metadata types and their dtypes (index = ValueType, STRING / ARRAY excluded).
struct NumericType {
  ValueType type;
  Dtype dtype;
};
constexpr NumericType kNumeric[] = {{UINT8, uint8},     {INT8, int8},      {UINT16, uint16},
                                    {INT16, int16},     {UINT32, uint32},  {INT32, int32},
                                    {FLOAT32, float32}, {BOOL, bool_},     {UINT64, uint64},
                                    {INT64, int64},     {FLOAT64, float64}};

const NumericType* numeric(uint32_t t) {
  for (auto& n : kNumeric) {
    if (n.type == t) {
      return &n;
    }
  }
  return nullptr;
}
const NumericType* numeric(Dtype d) {
  for (auto& n : kNumeric) {
    if (n.dtype == d) {
      return &n;
    }
  }
  return nullptr;
}

enum GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 8,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};
constexpr std::pair<GgmlType, Dtype> kPlain[] = {{F32, float32}, {F16, float16}, {BF16, bfloat16},
                                                 {I8, int8},     {I16, int16},   {I32, int32},
                                                 {I64, int64},   {F64, float64}};

// Bytes per block and bits of each quantized type.
struct QuantType {
  GgmlType type;
  uint64_t block_bytes;
  int bits;
};
constexpr QuantType kQuant[] = {{Q4_0, 18, 4}, {Q4_1, 20, 4}, {Q8_0, 34, 8}};

// The other common block types (the K-quants of Q4_K_M / Q5_K_M / Q6_K files, Q5_0, Q5_1)
// have no MLX layout: they are dequantized to float16, as MLX does (ggml's block layouts).
float f16_at(const uint8_t* p) {
  float16_t h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
}

void dequant_q5(const uint8_t* b, float* y, bool with_min) {
  float d = f16_at(b), m = with_min ? f16_at(b + 2) : 0.0f;
  const uint8_t* qhp = b + (with_min ? 4 : 2);
  uint32_t qh;
  std::memcpy(&qh, qhp, 4);
  const uint8_t* qs = qhp + 4;
  for (int j = 0; j < 16; ++j) {
    int x0 = (qs[j] & 0xF) | (((qh >> j) << 4) & 0x10);
    int x1 = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
    y[j] = with_min ? d * x0 + m : d * (x0 - 16);
    y[j + 16] = with_min ? d * x1 + m : d * (x1 - 16);
  }
}
void dequant_q5_0(const uint8_t* b, float* y) { dequant_q5(b, y, false); }
void dequant_q5_1(const uint8_t* b, float* y) { dequant_q5(b, y, true); }

// The 6-bit scale and min of sub-block j of a Q4_K / Q5_K super-block.
void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_K (144 bytes) and Q5_K (176 bytes): d, dmin, 12 bytes of scales, [qh 32,] qs 128.
void dequant_k45(const uint8_t* b, float* y, bool five) {
  float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + (five ? 48 : 16);
  int is = 0;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < 256; j += 64) {
    int sc, m;
    scale_min_k4(is, scales, sc, m);
    float d1 = d * sc, m1 = dmin * m;
    scale_min_k4(is + 1, scales, sc, m);
    float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) {
      int hi1 = five && (qh[l] & u1) ? 16 : 0;
      int hi2 = five && (qh[l] & u2) ? 16 : 0;
      y[j + l] = d1 * ((ql[l] & 0xF) + hi1) - m1;
      y[j + 32 + l] = d2 * ((ql[l] >> 4) + hi2) - m2;
    }
    ql += 32;
    is += 2;
    u1 <<= 2;
    u2 <<= 2;
  }
}
void dequant_q4_k(const uint8_t* b, float* y) { dequant_k45(b, y, false); }
void dequant_q5_k(const uint8_t* b, float* y) { dequant_k45(b, y, true); }

// Q6_K (210 bytes): ql 128, qh 64, 16 int8 scales, d.
void dequant_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  float d = f16_at(b + 208);
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; ++l) {
      int is = l / 16;
      int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[n + l] = d * sc[is] * q1;
      y[n + l + 32] = d * sc[is + 2] * q2;
      y[n + l + 64] = d * sc[is + 4] * q3;
      y[n + l + 96] = d * sc[is + 6] * q4;
    }
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

struct DequantType {
  uint32_t type;
  uint64_t block_elems;
  uint64_t block_bytes;
  void (*fn)(const uint8_t*, float*);
};
constexpr DequantType kDequant[] = {{6, 32, 22, dequant_q5_0},
                                    {7, 32, 24, dequant_q5_1},
                                    {12, 256, 144, dequant_q4_k},
                                    {13, 256, 176, dequant_q5_k},
                                    {14, 256, 210, dequant_q6_k}};

const char* ggml_name(uint32_t t) {
  static const char* names[] = {"F32",   "F16",   "Q4_0",    "Q4_1",   "Q4_2",    "Q4_3",  "Q5_0",
                                "Q5_1",  "Q8_0",  "Q8_1",    "Q2_K",   "Q3_K",    "Q4_K",  "Q5_K",
                                "Q6_K",  "Q8_K",  "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
                                "IQ3_S", "IQ2_S", "IQ4_XS",  "I8",     "I16",     "I32",   "I64",
                                "F64",   "IQ1_M", "BF16"};
  return t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}

// Sequential reads from a reader, buffered, each checked against the file size.
class Cursor {
 public:
  Cursor(io::Reader& in, const Context& ctx) : in_(in), ctx_(ctx), size_(in.size()) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  void read(char* out, uint64_t n) {
    if (n > remaining()) {
      ctx_.fail("truncated: " + std::to_string(n) + " bytes needed at byte " +
                std::to_string(pos_) + ", " + std::to_string(remaining()) + " left");
    }
    while (n > 0) {
      if (buf_pos_ == buf_.size()) {
        size_t chunk = static_cast<size_t>(std::min<uint64_t>(kChunk, remaining()));
        buf_.resize(chunk);
        in_.read(buf_.data(), chunk, pos_);
        buf_pos_ = 0;
      }
      size_t take = static_cast<size_t>(std::min<uint64_t>(n, buf_.size() - buf_pos_));
      std::memcpy(out, buf_.data() + buf_pos_, take);
      out += take;
      n -= take;
      buf_pos_ += take;
      pos_ += take;
    }
  }
  template <typename T>
  T get() {
    char b[sizeof(T)];
    read(b, sizeof(T));
    T v;
    std::memcpy(&v, b, sizeof(T));  // little-endian host
    return v;
  }
  std::string str(const char* what) {
    uint64_t n = get<uint64_t>();
    if (n > remaining() || n > kMaxString) {
      ctx_.fail(std::string(what) + " of " + std::to_string(n) + " bytes exceeds the file");
    }
    std::string s(static_cast<size_t>(n), '\0');
    read(s.data(), n);
    return s;
  }
  // A count of items of at least `min_bytes` each, checked against the bytes left.
  uint64_t count(uint64_t min_bytes, const std::string& what) {
    uint64_t n = get<uint64_t>();
    if (min_bytes > 0 && n > remaining() / min_bytes) {
      ctx_.fail(what + " count " + std::to_string(n) + " exceeds what the file can hold");
    }
    return n;
  }

 private:
  static constexpr uint64_t kChunk = 1 << 16;
  io::Reader& in_;
  const Context& ctx_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::vector<char> buf_;
  size_t buf_pos_ = 0;
};

uint64_t value_bytes(uint32_t t) {
  switch (t) {
    case UINT8:
    case INT8:
    case BOOL:
      return 1;
    case UINT16:
    case INT16:
      return 2;
    case UINT32:
    case INT32:
    case FLOAT32:
      return 4;
    default:
      return 8;  // 64-bit values; a string's length field
  }
}

GGUFMetaData read_value(Cursor& c, uint32_t type, const std::string& key, const Context& ctx) {
  if (type == STRING) {
    return c.str("string value");
  }
  if (const NumericType* n = numeric(type)) {
    array a(allocator::malloc(size_of(n->dtype)), Shape{}, n->dtype);
    c.read(a.data<char>(), size_of(n->dtype));
    if (n->dtype == bool_) {
      normalize_bool(a.data<char>(), 1);
    }
    return a;
  }
  if (type != ARRAY) {
    ctx.fail("metadata '" + key + "' has unknown value type " + std::to_string(type));
  }
  uint32_t elem = c.get<uint32_t>();
  if (elem == STRING) {
    uint64_t n = c.count(8, "metadata '" + key + "' array");
    std::vector<std::string> out;
    out.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      out.push_back(c.str("string value"));
    }
    return out;
  }
  const NumericType* n = numeric(elem);
  if (!n) {
    ctx.fail("metadata '" + key + "' is an array of unsupported type " + std::to_string(elem));
  }
  uint64_t count = c.count(value_bytes(elem), "metadata '" + key + "' array");
  if (count > INT32_MAX) {
    ctx.fail("metadata '" + key + "' array has " + std::to_string(count) + " elements");
  }
  uint64_t bytes = count * size_of(n->dtype);
  array a(allocator::malloc(bytes), Shape{static_cast<int32_t>(count)}, n->dtype);
  c.read(a.data<char>(), bytes);
  if (n->dtype == bool_) {
    normalize_bool(a.data<char>(), bytes);
  }
  return a;
}

struct TensorInfo {
  std::string name;
  Shape shape;  // row-major (GGUF's dimensions reversed)
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  const QuantType* quant = nullptr;
  const DequantType* dequant = nullptr;
  Dtype dtype = float32;
};

// Q4_0 / Q4_1 / Q8_0 blocks to MLX's affine layout: codes as a little-endian bit stream in
// uint32 words, float16 scales and biases per group of 32 (w = scale * code + bias).
void decode_blocks(const QuantType& q, const char* src, uint64_t blocks, uint32_t* codes,
                   float16_t* scales, float16_t* biases) {
  for (uint64_t b = 0; b < blocks; ++b) {
    const auto* blk = reinterpret_cast<const uint8_t*>(src + b * q.block_bytes);
    float16_t d, m;
    std::memcpy(&d, blk, 2);
    uint8_t code[kGroup];
    if (q.type == Q8_0) {
      for (int j = 0; j < kGroup; ++j) {
        code[j] = static_cast<uint8_t>(static_cast<int8_t>(blk[2 + j]) + 128);
      }
      scales[b] = d;
      biases[b] = float16_t(-128.0f * static_cast<float>(d));
      uint32_t* w = codes + b * 8;
      for (int k = 0; k < 8; ++k) {
        w[k] = uint32_t(code[4 * k]) | (uint32_t(code[4 * k + 1]) << 8) |
               (uint32_t(code[4 * k + 2]) << 16) | (uint32_t(code[4 * k + 3]) << 24);
      }
      continue;
    }
    const uint8_t* qs = blk + (q.type == Q4_1 ? 4 : 2);
    for (int j = 0; j < 16; ++j) {
      code[j] = qs[j] & 0xF;
      code[j + 16] = qs[j] >> 4;
    }
    scales[b] = d;
    if (q.type == Q4_1) {
      std::memcpy(&m, blk + 2, 2);
      biases[b] = m;
    } else {
      biases[b] = float16_t(-8.0f * static_cast<float>(d));
    }
    uint32_t* w = codes + b * 4;
    for (int k = 0; k < 4; ++k) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i) {
        word |= uint32_t(code[8 * k + i]) << (4 * i);
      }
      w[k] = word;
    }
  }
}

}  // namespace

GGUFLoad load_gguf(std::shared_ptr<io::Reader> in_stream, StreamOrDevice s) {
  io::Reader& in = checked(in_stream, "load_gguf");
  Context ctx{"load", ".gguf", in.label()};
  Cursor c(in, ctx);
  if (in.size() < 24) {
    ctx.fail("too short for a header (" + std::to_string(in.size()) + " bytes)");
  }
  if (c.get<uint32_t>() != kMagic) {
    ctx.fail("not a GGUF file (bad magic)");
  }
  uint32_t version = c.get<uint32_t>();
  if (version != 2 && version != 3) {
    ctx.fail("GGUF version " + std::to_string(version) + " is not supported (2 or 3)");
  }
  // Each tensor info takes at least 8 + 4 + 4 + 8 bytes, each metadata entry 8 + 4 + 1.
  uint64_t num_tensors = c.get<uint64_t>();
  uint64_t num_kv = c.get<uint64_t>();
  if (num_tensors > c.remaining() / 24 || num_kv > c.remaining() / 13) {
    ctx.fail("declares " + std::to_string(num_tensors) + " tensors and " + std::to_string(num_kv) +
             " metadata entries, more than the file can hold");
  }
  GGUFLoad result;
  uint64_t alignment = kDefaultAlignment;
  for (uint64_t i = 0; i < num_kv; ++i) {
    std::string key = c.str("metadata key");
    uint32_t type = c.get<uint32_t>();
    GGUFMetaData v = read_value(c, type, key, ctx);
    if (key == "general.alignment") {
      auto* a = std::get_if<array>(&v);
      if (!a || type != UINT32 || a->item<uint32_t>() == 0 ||
          (a->item<uint32_t>() & (a->item<uint32_t>() - 1)) != 0) {
        ctx.fail("general.alignment must be a uint32 power of two");
      }
      alignment = a->item<uint32_t>();
    }
    if (!result.second.emplace(key, std::move(v)).second) {
      ctx.fail("metadata key '" + key + "' appears twice");
    }
  }
  std::vector<TensorInfo> tensors;
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < num_tensors; ++i) {
    TensorInfo t;
    t.name = c.str("tensor name");
    std::string what = "tensor '" + t.name + "'";
    if (!names.insert(t.name).second) {
      ctx.fail(what + " appears twice");
    }
    uint32_t nd = c.get<uint32_t>();
    if (nd > kMaxDims) {
      ctx.fail(what + " has " + std::to_string(nd) + " dimensions (at most 8)");
    }
    std::vector<uint64_t> ne(nd);
    uint64_t numel = 1;
    bool huge = false;
    for (uint32_t d = 0; d < nd; ++d) {
      ne[d] = c.get<uint64_t>();
      if (ne[d] > INT32_MAX) {
        ctx.fail(what + " has dimension " + std::to_string(ne[d]));
      }
      // Past 2^56 elements no file holds the data, and byte counts could overflow.
      huge |= ne[d] != 0 && numel > (uint64_t(1) << 56) / ne[d];
      numel = huge ? 0 : numel * ne[d];
    }
    if (huge) {
      ctx.fail(what + " has more elements than the file can hold");
    }
    t.shape.assign(ne.rbegin(), ne.rend());
    t.type = c.get<uint32_t>();
    t.offset = c.get<uint64_t>();
    auto plain = std::find_if(std::begin(kPlain), std::end(kPlain),
                              [&](auto& p) { return p.first == t.type; });
    auto quant = std::find_if(std::begin(kQuant), std::end(kQuant),
                              [&](auto& q) { return q.type == t.type; });
    if (plain != std::end(kPlain)) {
      t.dtype = plain->second;
      t.bytes = numel * size_of(t.dtype);
    } else if (quant != std::end(kQuant)) {
      t.quant = &*quant;
      if (nd == 0 || ne[0] % kGroup != 0) {
        ctx.fail(what + " of type " + ggml_name(t.type) + " has an inner dimension of " +
                 std::to_string(nd ? ne[0] : 0) + ", not a multiple of 32");
      }
      t.bytes = numel / kGroup * quant->block_bytes;
    } else if (auto dq = std::find_if(std::begin(kDequant), std::end(kDequant),
                                      [&](auto& d) { return d.type == t.type; });
               dq != std::end(kDequant)) {
      t.dequant = &*dq;
      t.dtype = float16;
      if (nd == 0 || ne[0] % dq->block_elems != 0) {
        ctx.fail(what + " of type " + ggml_name(t.type) + " has an inner dimension of " +
                 std::to_string(nd ? ne[0] : 0) + ", not a multiple of " +
                 std::to_string(dq->block_elems));
      }
      t.bytes = numel / dq->block_elems * dq->block_bytes;
    } else {
      ctx.fail(what + " has unsupported type " + std::to_string(t.type) + " (" + ggml_name(t.type) +
               "); F32, F16, BF16, F64, I8-I64, Q4_0, Q4_1, Q8_0 (MLX's quantized layout) and "
               "Q5_0, Q5_1, Q4_K, Q5_K, Q6_K (as float16) load");
    }
    tensors.push_back(std::move(t));
  }
  uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
  uint64_t data_len = data_start <= in.size() ? in.size() - data_start : 0;
  for (auto& t : tensors) {
    if (t.offset > data_len || t.bytes > data_len - t.offset) {
      ctx.fail("tensor '" + t.name + "' (" + std::to_string(t.bytes) + " bytes at offset " +
               std::to_string(t.offset) + ") lies outside the " + std::to_string(data_len) +
               " bytes of data");
    }
  }

  // Everything is checked: the arrays, each read when evaluated.
  bool eager = !can_load_lazily(in_stream);
  for (auto& t : tensors) {
    uint64_t begin = data_start + t.offset;
    if (t.dequant) {
      const DequantType dq = *t.dequant;
      uint64_t blocks = t.bytes / dq.block_bytes;
      auto arrays = load_arrays(
          in_stream, {t.shape}, {float16},
          [dq, begin, blocks](io::Reader& r, std::vector<array>& out) {
            constexpr uint64_t kBlocksPerChunk = 4096;
            std::vector<char> buf(
                static_cast<size_t>(std::min(blocks, kBlocksPerChunk) * dq.block_bytes));
            std::vector<float> vals(static_cast<size_t>(dq.block_elems));
            float16_t* dst = out[0].data<float16_t>();
            for (uint64_t b = 0; b < blocks; b += kBlocksPerChunk) {
              uint64_t n = std::min(kBlocksPerChunk, blocks - b);
              r.read(buf.data(), n * dq.block_bytes, begin + b * dq.block_bytes);
              for (uint64_t i = 0; i < n; ++i) {
                dq.fn(reinterpret_cast<const uint8_t*>(buf.data()) + i * dq.block_bytes,
                      vals.data());
                float16_t* o = dst + (b + i) * dq.block_elems;
                for (uint64_t e = 0; e < dq.block_elems; ++e) {
                  o[e] = float16_t(vals[e]);
                }
              }
            }
          },
          eager);
      result.first.emplace(t.name, std::move(arrays[0]));
      continue;
    }
    if (!t.quant) {
      uint64_t bytes = t.bytes;
      auto arrays = load_arrays(
          in_stream, {t.shape}, {t.dtype},
          [begin, bytes](io::Reader& r, std::vector<array>& out) {
            r.read(out[0].data<char>(), bytes, begin);
          },
          eager);
      result.first.emplace(t.name, std::move(arrays[0]));
      continue;
    }
    const QuantType q = *t.quant;
    Shape w_shape = t.shape, g_shape = t.shape;
    int k = t.shape.back();
    w_shape.back() = k * q.bits / 32;
    g_shape.back() = k / kGroup;
    uint64_t blocks = t.bytes / q.block_bytes;
    auto arrays = load_arrays(
        in_stream, {w_shape, g_shape, g_shape}, {uint32, float16, float16},
        [q, begin, blocks](io::Reader& r, std::vector<array>& out) {
          // Converted a chunk of blocks at a time: at most 4 MB beyond the outputs.
          constexpr uint64_t kBlocksPerChunk = (4u << 20) / 34;
          std::vector<char> buf(
              static_cast<size_t>(std::min(blocks, kBlocksPerChunk) * q.block_bytes));
          uint32_t* codes = out[0].data<uint32_t>();
          float16_t* scales = out[1].data<float16_t>();
          float16_t* biases = out[2].data<float16_t>();
          uint32_t words = static_cast<uint32_t>(kGroup * q.bits / 32);
          for (uint64_t b = 0; b < blocks; b += kBlocksPerChunk) {
            uint64_t n = std::min(kBlocksPerChunk, blocks - b);
            r.read(buf.data(), n * q.block_bytes, begin + b * q.block_bytes);
            decode_blocks(q, buf.data(), n, codes + b * words, scales + b, biases + b);
          }
        },
        eager);
    std::string base = t.name;
    if (base.size() > 7 && base.compare(base.size() - 7, 7, ".weight") == 0) {
      base.resize(base.size() - 7);
    }
    std::string w_name = base == t.name ? t.name : base + ".weight";
    for (auto& n : {base + ".scales", base + ".biases"}) {
      if (names.count(n)) {
        ctx.fail("quantized tensor '" + t.name + "' would load as '" + n +
                 "', which the file also holds");
      }
    }
    result.first.emplace(w_name, std::move(arrays[0]));
    result.first.emplace(base + ".scales", std::move(arrays[1]));
    result.first.emplace(base + ".biases", std::move(arrays[2]));
  }
  return result;
}

GGUFLoad load_gguf(const std::string& file, StreamOrDevice s) {
  return load_gguf(open_reader("load_gguf", file), s);
}

namespace {

void put_string(std::string& out, const std::string& s) {
  put_le(out, s.size(), 8);
  out += s;
}

void put_numeric_value(std::string& out, const array& a) { out.append(a.data<char>(), a.nbytes()); }

}  // namespace

void save_gguf(std::shared_ptr<io::Writer> out_stream,
               std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata) {
  io::Writer& out = checked(out_stream, "save_gguf");
  std::vector<std::pair<std::string, array>> sorted(arrays.begin(), arrays.end());
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, GGUFMetaData>> meta(metadata.begin(), metadata.end());
  std::sort(meta.begin(), meta.end(), [](auto& a, auto& b) { return a.first < b.first; });

  std::vector<array> dense;
  std::vector<uint32_t> types;
  for (auto& [name, a] : sorted) {
    auto it = std::find_if(std::begin(kPlain), std::end(kPlain),
                           [&](auto& p) { return p.second == a.dtype(); });
    if (it == std::end(kPlain)) {
      throw std::invalid_argument("[save_gguf] Array '" + name + "' has dtype " +
                                  dtype_name(a.dtype()) +
                                  ", which GGUF cannot hold (float32, float16, bfloat16, "
                                  "float64 and int8 to int64 can).");
    }
    if (a.ndim() > static_cast<int>(kMaxDims)) {
      throw std::invalid_argument("[save_gguf] Array '" + name + "' has more than 8 dimensions.");
    }
    types.push_back(it->first);
    dense.push_back(contiguous(a));
  }
  std::vector<array> meta_arrays;
  for (auto& [key, v] : meta) {
    if (auto* a = std::get_if<array>(&v)) {
      if (!numeric(a->dtype()) || a->ndim() > 1) {
        throw std::invalid_argument("[save_gguf] Metadata '" + key +
                                    "' must be a scalar or 1-D array of a bool, integer, float32 "
                                    "or float64 dtype.");
      }
      *a = contiguous(*a);
      meta_arrays.push_back(*a);
    } else if (std::holds_alternative<std::monostate>(v)) {
      throw std::invalid_argument("[save_gguf] Metadata '" + key + "' has no value.");
    }
  }
  eval(dense);
  eval(meta_arrays);

  uint64_t alignment = kDefaultAlignment;
  std::string h;
  put_le(h, kMagic, 4);
  put_le(h, 3, 4);
  put_le(h, sorted.size(), 8);
  put_le(h, meta.size(), 8);
  for (auto& [key, v] : meta) {
    put_string(h, key);
    if (auto* s = std::get_if<std::string>(&v)) {
      put_le(h, STRING, 4);
      put_string(h, *s);
    } else if (auto* l = std::get_if<std::vector<std::string>>(&v)) {
      put_le(h, ARRAY, 4);
      put_le(h, STRING, 4);
      put_le(h, l->size(), 8);
      for (auto& s : *l) {
        put_string(h, s);
      }
    } else {
      auto& a = std::get<array>(v);
      const NumericType* n = numeric(a.dtype());
      if (a.ndim() == 0) {
        put_le(h, n->type, 4);
      } else {
        put_le(h, ARRAY, 4);
        put_le(h, n->type, 4);
        put_le(h, a.size(), 8);
      }
      put_numeric_value(h, a);
      if (key == "general.alignment") {
        if (n->type != UINT32 || a.ndim() != 0 || a.item<uint32_t>() == 0 ||
            (a.item<uint32_t>() & (a.item<uint32_t>() - 1)) != 0) {
          throw std::invalid_argument(
              "[save_gguf] general.alignment must be a uint32 scalar power of two.");
        }
        alignment = a.item<uint32_t>();
      }
    }
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const array& a = dense[i];
    put_string(h, sorted[i].first);
    put_le(h, a.ndim(), 4);
    for (int d = a.ndim() - 1; d >= 0; --d) {
      put_le(h, a.shape(d), 8);
    }
    put_le(h, types[i], 4);
    put_le(h, offset, 8);
    offset = (offset + a.nbytes() + alignment - 1) / alignment * alignment;
  }
  h.append((alignment - h.size() % alignment) % alignment, '\0');
  out.write(h.data(), h.size());
  std::string pad(alignment, '\0');
  for (auto& a : dense) {
    out.write(a.data<char>(), a.nbytes());
    out.write(pad.data(), (alignment - a.nbytes() % alignment) % alignment);
  }
  out.flush();
}

void save_gguf(std::string file, std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata) {
  auto out = open_writer("save_gguf", with_extension(std::move(file), ".gguf"));
  save_gguf(out, std::move(arrays), std::move(metadata));
}

}  // namespace mlx::core
