// The read position of a small text-header parser and the scanning steps that both header
// formats share (.npy's Python-dict header, safetensors' JSON). `Parser` derives from it and
// provides `[[noreturn]] void fail(const std::string& problem)`.
#pragma once

#include <string>
#include <string_view>

namespace mlx::core::io::detail {

template <typename Parser>
class TextCursor {
 protected:
  // `blanks` are the characters skip_space passes over.
  TextCursor(std::string_view s, std::string_view blanks) : s_(s), blanks_(blanks) {}

  void skip_space() {
    while (pos_ < s_.size() && blanks_.find(s_[pos_]) != std::string_view::npos) {
      ++pos_;
    }
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) {
      static_cast<Parser*>(this)->fail(std::string("expected '") + c + "'");
    }
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  std::string_view s_;
  size_t pos_ = 0;

 private:
  std::string_view blanks_;
};

}  // namespace mlx::core::io::detail
