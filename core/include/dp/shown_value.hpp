// A value a user, a site or the environment gave, as an error message
// echoes it: at most about 64 characters (a 100 000-character option must not
// print 200 KB), marked when cut, control characters as '?'.
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
    out.push_back(c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c));
  }
  if (v.size() > max) out += "...(" + std::to_string(v.size()) + " bytes)";
  return out;
}

}  // namespace dp
