#include "env_parse.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "dp/env_names.hpp"
#include "dp/list_text.hpp"
#include "dp/params.hpp"

namespace dp::detail {

std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

Result<int> parse_int(std::string_view name, std::string_view text, int lo, int hi) {
  auto n = parse_env_integer(name, text, lo, hi);
  DP_TRY(n);
  return static_cast<int>(*n);
}

void print_params_once(int rank) {
  static std::once_flag once;
  std::call_once(once, [rank] {
    if (rank != 0 || !debug_enabled()) return;
    std::istringstream lines(describe_params());
    for (std::string line; std::getline(lines, line);)
      std::fprintf(stderr, "slurm-dp: rank 0 setting %s\n", line.c_str());
  });
}

Result<std::vector<int>> parse_int_list(std::string_view name, std::string_view text) {
  std::vector<int> out;
  for (std::string_view item : list_items(text)) {
    auto v = parse_int(name, item, 0, 1 << 20);
    if (!v) {
      return make_error(
          Errc::invalid_argument,
          std::string(name) + "='" + std::string(text) +
              "' is not a comma-separated list of non-negative integers (e.g. 0,1,2,3)");
    }
    out.push_back(*v);
  }
  return out;
}

}  // namespace dp::detail
