// Slurm's comma lists (device lists, TRES, tasks per node) as the layout
// reads and writes them: internal to the core's layout files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dp::layout_text {

inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ',';
    out += s;
  }
  return out;
}

inline std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    if (comma > start) out.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Slurm's gres plugin writes this when a step has no device of the kind.
inline bool slurm_says_none(const std::string& v) { return v.empty() || v == "NoDevFiles"; }

}  // namespace dp::layout_text
