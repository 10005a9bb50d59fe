// Comma lists as every part reads and writes them (Slurm's device lists,
// TRES and port reservations, the agent's rank and port lists, a trainer's
// widths): the one splitter. Each caller parses its items; an empty item is
// an item, so "1,,2" and "1," are refused where numbers are wanted.
// Header-only, so every part takes it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dp {

// The items between `sep`s ("a,,b": "a", "", "b"); none for an empty text.
inline std::vector<std::string_view> list_items(std::string_view text, char sep = ',') {
  std::vector<std::string_view> out;
  if (text.empty()) return out;
  for (size_t at = 0;;) {
    const size_t end = text.find(sep, at);
    out.push_back(text.substr(at, end == std::string_view::npos ? end : end - at));
    if (end == std::string_view::npos) return out;
    at = end + 1;
  }
}

// The items joined by `sep`.
inline std::string join_list(const std::vector<std::string>& items, char sep = ',') {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

}  // namespace dp
