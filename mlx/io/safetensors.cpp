// .safetensors: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the data.
#include <algorithm>
#include <climits>
#include <sstream>
#include <stdexcept>

#include "mlx/io/detail.h"
#include "mlx/io/io.h"
#include "mlx/io/json.h"
#include "mlx/io/lazy_load.h"
#include "mlx/ops/creation.h"
#include "mlx/runtime/eval.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace io::detail;

// The reference implementation refuses headers over 100 MB.
constexpr uint64_t kMaxHeaderLen = 100'000'000;
constexpr int kMaxDims = 64;
constexpr const char* kMetadataKey = "__metadata__";

constexpr std::pair<const char*, Dtype> kDtypes[] = {
    {"BOOL", bool_},    {"U8", uint8},    {"I8", int8},     {"U16", uint16},   {"I16", int16},
    {"U32", uint32},    {"I32", int32},   {"U64", uint64},  {"I64", int64},    {"F16", float16},
    {"BF16", bfloat16}, {"F32", float32}, {"F64", float64}, {"C64", complex64}};

const char* safetensors_name(Dtype t) {
  for (auto& [name, dt] : kDtypes) {
    if (dt == t) {
      return name;
    }
  }
  return "";
}

const Json* find(const Json& obj, const std::string& key) {
  for (auto& [k, v] : obj.members) {
    if (k == key) {
      return &v;
    }
  }
  return nullptr;
}

struct TensorInfo {
  std::string name;
  Dtype dtype = bool_;
  Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

TensorInfo parse_tensor(const std::string& name, const Json& v, uint64_t data_len,
                        const Context& ctx) {
  const std::string what = "tensor '" + name + "'";
  if (v.type != Json::Type::object) {
    ctx.fail(what + " is not a JSON object");
  }
  const Json* dtype = find(v, "dtype");
  const Json* shape = find(v, "shape");
  const Json* offsets = find(v, "data_offsets");
  if (!dtype || dtype->type != Json::Type::string) {
    ctx.fail(what + " has no dtype string");
  }
  if (!shape || shape->type != Json::Type::array || shape->items.size() > kMaxDims) {
    ctx.fail(what + " has no shape list (of at most " + std::to_string(kMaxDims) + " entries)");
  }
  if (!offsets || offsets->type != Json::Type::array || offsets->items.size() != 2) {
    ctx.fail(what + " has no data_offsets pair");
  }
  TensorInfo t;
  t.name = name;
  auto it = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                         [&](auto& p) { return dtype->text == p.first; });
  if (it == std::end(kDtypes)) {
    ctx.fail(what + " has unsupported dtype '" + dtype->text + "'");
  }
  t.dtype = it->second;
  uint64_t nbytes = size_of(t.dtype);
  bool overflow = false;
  for (auto& d : shape->items) {
    uint64_t dim = d.as_uint(ctx, what + " dimension");
    if (dim > INT32_MAX) {
      ctx.fail(what + " has dimension " + std::to_string(dim) + ", larger than " +
               std::to_string(INT32_MAX));
    }
    overflow |= dim != 0 && nbytes > UINT64_MAX / dim;
    nbytes *= dim;
    t.shape.push_back(static_cast<int32_t>(dim));
  }
  t.begin = offsets->items[0].as_uint(ctx, what + " data offset");
  t.end = offsets->items[1].as_uint(ctx, what + " data offset");
  if (t.begin > t.end || t.end > data_len) {
    ctx.fail(what + " has data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
             "] outside the " + std::to_string(data_len) + " bytes of data");
  }
  if (overflow || t.end - t.begin != nbytes) {
    ctx.fail(what + " of shape " + to_string(t.shape) + " and dtype " + dtype->text +
             " does not match its " + std::to_string(t.end - t.begin) + " bytes of data");
  }
  return t;
}

}  // namespace

SafetensorsLoad load_safetensors(std::shared_ptr<io::Reader> in_stream, StreamOrDevice s) {
  io::Reader& in = checked(in_stream, "load_safetensors");
  Context ctx{"load_safetensors", ".safetensors", in.label()};
  uint64_t size = in.size();
  if (size < 8) {
    ctx.fail("too short for a header (" + std::to_string(size) + " bytes)");
  }
  char len_bytes[8];
  in.read(len_bytes, 8, 0);
  uint64_t header_len = get_u64(len_bytes);
  if (header_len > size - 8 || header_len > kMaxHeaderLen) {
    ctx.fail("header length " + std::to_string(header_len) + " exceeds the " +
             std::to_string(size - 8) + " bytes that follow (or the 100 MB limit)");
  }
  std::string header(static_cast<size_t>(header_len), '\0');
  in.read(header.data(), header.size(), 8);
  Json root = parse_json(header, ctx);
  if (root.type != Json::Type::object) {
    ctx.fail("the header is not a JSON object");
  }
  uint64_t data_start = 8 + header_len;
  uint64_t data_len = size - data_start;

  SafetensorsLoad result;
  std::vector<TensorInfo> tensors;
  for (auto& [key, v] : root.members) {
    if (key != kMetadataKey) {
      tensors.push_back(parse_tensor(key, v, data_len, ctx));
      continue;
    }
    // MLX itself writes "__metadata__": null when there is no metadata.
    if (v.type == Json::Type::null) {
      continue;
    }
    if (v.type != Json::Type::object) {
      ctx.fail("__metadata__ is not a JSON object (or null)");
    }
    for (auto& [mk, mv] : v.members) {
      if (mv.type != Json::Type::string) {
        ctx.fail("__metadata__ value of '" + mk + "' is not a string");
      }
      result.second.emplace(mk, mv.text);
    }
  }
  // Everything is checked before any tensor memory is allocated; each tensor is read when
  // evaluated (at once for readers that cannot be read later).
  bool eager = !can_load_lazily(in_stream);
  for (auto& t : tensors) {
    uint64_t begin = data_start + t.begin, bytes = t.end - t.begin;
    bool is_bool = t.dtype == bool_;
    auto arrays = load_arrays(
        in_stream, {t.shape}, {t.dtype},
        [begin, bytes, is_bool](io::Reader& r, std::vector<array>& out) {
          r.read(out[0].data<char>(), bytes, begin);
          if (is_bool) {
            normalize_bool(out[0].data<char>(), bytes);
          }
        },
        eager);
    result.first.emplace(t.name, std::move(arrays[0]));
  }
  return result;
}

SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice s) {
  return load_safetensors(open_reader("load_safetensors", file), s);
}

void save_safetensors(std::shared_ptr<io::Writer> out_stream,
                      std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata) {
  io::Writer& out = checked(out_stream, "save_safetensors");
  if (arrays.count(kMetadataKey)) {
    throw std::invalid_argument("[save_safetensors] '__metadata__' cannot name an array.");
  }
  // Sorted names make equal inputs give equal files.
  std::vector<std::pair<std::string, array>> sorted(arrays.begin(), arrays.end());
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<array> dense;
  for (auto& [name, a] : sorted) {
    dense.push_back(contiguous(a));
  }
  eval(dense);

  std::ostringstream h;
  const char* sep = "";
  h << "{";
  if (!metadata.empty()) {
    std::vector<std::pair<std::string, std::string>> meta(metadata.begin(), metadata.end());
    std::sort(meta.begin(), meta.end());
    h << json_quote(kMetadataKey) << ":{";
    for (auto& [key, value] : meta) {
      h << sep << json_quote(key) << ":" << json_quote(value);
      sep = ",";
    }
    h << "}";
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const array& a = dense[i];
    h << (i || !metadata.empty() ? "," : "") << json_quote(sorted[i].first) << ":{\"dtype\":\""
      << safetensors_name(a.dtype()) << "\",\"shape\":[";
    for (int d = 0; d < a.ndim(); ++d) {
      h << (d ? "," : "") << a.shape(d);
    }
    h << "],\"data_offsets\":[" << offset << "," << offset + a.nbytes() << "]}";
    offset += a.nbytes();
  }
  h << "}";
  std::string header = h.str();
  // Spaces pad the header so that the data starts 8-byte aligned.
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string len;
  put_le(len, header.size(), 8);
  out.write(len.data(), len.size());
  out.write(header.data(), header.size());
  for (auto& a : dense) {
    out.write(a.data<char>(), a.nbytes());
  }
  out.flush();
}

void save_safetensors(std::string file, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata) {
  auto out = open_writer("save_safetensors", with_extension(std::move(file), ".safetensors"));
  save_safetensors(out, std::move(arrays), std::move(metadata));
}

}  // namespace mlx::core
