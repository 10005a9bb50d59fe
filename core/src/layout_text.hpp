// Slurm's comma lists (device lists, TRES, tasks per node) as the layout
// reads and writes them: internal to the core's layout files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dp/list_text.hpp"

namespace dp::layout_text {

inline std::string join(const std::vector<std::string>& items) { return join_list(items); }

// Slurm's lists skip empty items ("0,,1" is devices 0 and 1).
inline std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view item : list_items(text))
    if (!item.empty()) out.emplace_back(item);
  return out;
}

// Slurm's gres plugin writes this when a step has no device of the kind.
inline bool slurm_says_none(const std::string& v) { return v.empty() || v == "NoDevFiles"; }

}  // namespace dp::layout_text
