// Text someone else wrote (a user's option, a site's line, the environment,
// a peer's key or message), as a message or a log line shows it: the one way
// the whole house shows untrusted text. Printable ASCII only (a control
// character, an escape sequence's ESC or a byte above 0x7e becomes '?'), at
// most `max` bytes (a 100 000-character option must not print 200 KB),
// marked with the full length when cut.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dp {

inline constexpr size_t kShownValueChars = 64;

inline std::string shown_value(std::string_view v, size_t max = kShownValueChars) {
  std::string out;
  const size_t n = v.size() > max ? max : v.size();
  out.reserve(n + 32);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    out.push_back(c < 0x20 || c > 0x7e ? '?' : static_cast<char>(c));
  }
  if (v.size() > max) out += "...(" + std::to_string(v.size()) + " bytes)";
  return out;
}

// A store key or barrier name in a message: quoted, at most 64 bytes shown.
inline std::string shown_key(std::string_view key) { return "'" + shown_value(key) + "'"; }

}  // namespace dp
