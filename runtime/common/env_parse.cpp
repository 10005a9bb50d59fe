#include "env_parse.hpp"

#include <charconv>
#include <cstdlib>

namespace dp::detail {

std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

Result<int> parse_int(std::string_view name, std::string_view text, int lo, int hi) {
  int value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (text.empty() || ec != std::errc() || ptr != last || value < lo || value > hi) {
    return make_error(Errc::invalid_argument,
                      std::string(name) + "='" + std::string(text) + "' is not an integer in [" +
                          std::to_string(lo) + ", " + std::to_string(hi) +
                          "]; fix or unset the variable");
  }
  return value;
}

Result<std::vector<int>> parse_int_list(std::string_view name, std::string_view text) {
  std::vector<int> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view item =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto v = parse_int(name, item, 0, 1 << 20);
    if (!v) {
      return make_error(Errc::invalid_argument,
                        std::string(name) + "='" + std::string(text) +
                            "' is not a comma-separated list of non-negative integers (e.g. 0,1,2,3)");
    }
    out.push_back(*v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace dp::detail
