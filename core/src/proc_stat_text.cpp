#include "dp/proc_stat_text.hpp"

#include <algorithm>

namespace dp {

std::optional<ProcStatText> split_proc_stat(std::string_view text) {
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  ProcStatText s{text.substr(open + 1, close - open - 1), {}};
  for (size_t at = close + 1; at < text.size();) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n')) ++at;
    const size_t end = std::min(text.find_first_of(" \n", at), text.size());
    if (end > at) s.fields.push_back(text.substr(at, end - at));
    at = end;
  }
  return s;
}

}  // namespace dp
