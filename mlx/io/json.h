// The JSON that safetensors headers need: a strict parser (depth-limited, UTF-8 checked,
// duplicate keys rejected) and string quoting for the writer. Internal.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mlx/io/detail.h"

namespace mlx::core::io::detail {

struct Json {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  std::string text;  // a string's value, or a number as written
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;  // in file order

  // The value of a non-negative integer number; fails through `ctx` naming `what` otherwise.
  uint64_t as_uint(const Context& ctx, const std::string& what) const;
};

Json parse_json(std::string_view text, const Context& ctx);

// `s` as a JSON string literal (quotes included).
std::string json_quote(std::string_view s);

}  // namespace mlx::core::io::detail
