#include "mlx/io/json.h"

#include <climits>
#include <cstdio>
#include <unordered_set>

#include "mlx/io/text_cursor.h"

namespace mlx::core::io::detail {

namespace {

// Enough for any safetensors header (3 levels) while bounding the recursion.
constexpr int kMaxDepth = 32;

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Parser : public TextCursor<Parser> {
 public:
  Parser(std::string_view s, const Context& ctx) : TextCursor(s, " \n\t\r"), ctx_(ctx) {}

  Json document() {
    Json v = value(0);
    skip_space();
    if (pos_ != s_.size()) {
      fail("unexpected text after the JSON value");
    }
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) {
    ctx_.fail("malformed JSON header (" + problem + " at byte " + std::to_string(pos_) + ")");
  }
  Json value(int depth) {
    if (depth > kMaxDepth) {
      fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    skip_space();
    if (pos_ >= s_.size()) {
      fail("unexpected end");
    }
    Json v;
    char c = s_[pos_];
    if (c == '{') {
      v.type = Json::Type::object;
      ++pos_;
      if (!consume('}')) {
        std::unordered_set<std::string> keys;
        do {
          skip_space();
          std::string key = string();
          if (!keys.insert(key).second) {
            fail("duplicate key \"" + key + "\"");
          }
          expect(':');
          v.members.emplace_back(std::move(key), value(depth + 1));
        } while (consume(','));
        expect('}');
      }
    } else if (c == '[') {
      v.type = Json::Type::array;
      ++pos_;
      if (!consume(']')) {
        do {
          v.items.push_back(value(depth + 1));
        } while (consume(','));
        expect(']');
      }
    } else if (c == '"') {
      v.type = Json::Type::string;
      v.text = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.type = Json::Type::number;
      v.text = number();
    } else if (literal("true") || literal("false")) {
      v.type = Json::Type::boolean;
      v.boolean = c == 't';
    } else if (literal("null")) {
      v.type = Json::Type::null;
    } else {
      fail("unexpected character");
    }
    return v;
  }

  std::string number() {
    size_t start = pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        ++pos_;
      }
      if (pos_ == d) {
        fail("malformed number");
      }
    };
    if (s_[pos_] == '-') {
      ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
        ++pos_;
      }
      digits();
    }
    return std::string(s_.substr(start, pos_ - start));
  }

  uint32_t hex4() {
    if (s_.size() - pos_ < 4) {
      fail("truncated \\u escape");
    }
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char h = s_[pos_++];
      int d = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (d < 0) {
        fail("bad \\u escape");
      }
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  // Copies one UTF-8 encoded character, checking that it is well formed.
  void utf8_char(std::string& out) {
    auto b = static_cast<unsigned char>(s_[pos_]);
    int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || s_.size() - pos_ < static_cast<size_t>(len)) {
      fail("invalid UTF-8");
    }
    uint32_t cp = len == 1 ? b : b & (0x7F >> len);
    for (int i = 1; i < len; ++i) {
      auto cb = static_cast<unsigned char>(s_[pos_ + i]);
      if ((cb & 0xC0) != 0x80) {
        fail("invalid UTF-8");
      }
      cp = (cp << 6) | (cb & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      fail("invalid UTF-8");
    }
    out.append(s_.substr(pos_, len));
    pos_ += len;
  }

  std::string string() {
    if (pos_ >= s_.size() || s_[pos_] != '"') {
      fail("expected a string");
    }
    ++pos_;
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) {
        fail("unterminated string");
      }
      char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        fail("control character in a string");
      }
      if (c != '\\') {
        utf8_char(out);
        continue;
      }
      if (++pos_ >= s_.size()) {
        fail("unterminated string");
      }
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!literal("\\u")) {
              fail("unpaired surrogate");
            }
            uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) {
              fail("unpaired surrogate");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }

  const Context& ctx_;
  friend class TextCursor<Parser>;
};

}  // namespace

uint64_t Json::as_uint(const Context& ctx, const std::string& what) const {
  bool digits = type == Type::number && !text.empty();
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      digits = false;
      break;
    }
    unsigned d = static_cast<unsigned>(c - '0');
    if (v > (UINT64_MAX - d) / 10) {
      ctx.fail(what + " " + text + " is too large");
    }
    v = v * 10 + d;
  }
  if (!digits) {
    ctx.fail(what + " must be a non-negative integer" + (text.empty() ? "" : ", got " + text));
  }
  return v;
}

Json parse_json(std::string_view text, const Context& ctx) { return Parser(text, ctx).document(); }

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

}  // namespace mlx::core::io::detail
