// Text someone else wrote (a user's option, a site's line, the environment,
// a peer's key or message, a rank's function and file names), as a message,
// a log line or a terminal shows it: the one way the whole house shows
// untrusted text. Printable ASCII only: a control character or a byte above
// 0x7e is written as an escape (\n, \r, \t, \xNN), so no newline, escape
// sequence or terminal control passes, and a line forged inside a value (a
// function named "x\nslurm-dp: ...") shows as the one value it is. A
// backslash stays as it is, so showing shown text again changes nothing. At
// most `max` bytes of `v` (a 100 000-character option must not print
// 200 KB), marked with the full length when cut.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dp {

inline constexpr size_t kShownValueChars = 64;

namespace shown_detail {

// `v` (at most `max` bytes of it) with every byte `kept` refuses escaped.
template <class Kept>
std::string escaped(std::string_view v, size_t max, Kept kept) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const size_t n = v.size() > max ? max : v.size();
  out.reserve(n + 32);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c <= 0x7e && kept(c)) {
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (v.size() > max) out += "...(" + std::to_string(v.size()) + " bytes)";
  return out;
}

}  // namespace shown_detail

inline std::string shown_value(std::string_view v, size_t max = kShownValueChars) {
  return shown_detail::escaped(v, max, [](unsigned char) { return true; });
}

// A name a program gave itself (a Python function's qualified name, the call
// its source names): only what an identifier holds stays as it is (letters,
// digits, '_', and the '.', '<', '>' of "f.<locals>.<lambda>"); every other
// byte is escaped the same way (a space too, so no sentence can be spelled
// in one). Showing it again changes nothing.
inline std::string shown_name(std::string_view v, size_t max = kShownValueChars) {
  return shown_detail::escaped(v, max, [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '<' || c == '>' || c == '\\';
  });
}

// A store key or barrier name in a message: quoted, at most 64 bytes shown.
inline std::string shown_key(std::string_view key) { return "'" + shown_value(key) + "'"; }

}  // namespace dp
