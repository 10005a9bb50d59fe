// Strict parsing of environment values: a bad value is one error line that
// names the variable and says what it should look like.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/result.hpp"

namespace dp::detail {

// nullopt when the variable is unset or empty.
std::optional<std::string> env_value(const char* name);

// Decimal integer in [lo, hi]; `name` is used in the error message.
Result<int> parse_int(std::string_view name, std::string_view text, int lo, int hi);

// With DP_DEBUG set (not 0): every effective setting of the table
// (dp/params.hpp) on stderr, once per process; only rank 0 prints.
void print_params_once(int rank);

// Comma-separated non-negative integers ("0,1,2,3"); empty text gives {}.
Result<std::vector<int>> parse_int_list(std::string_view name, std::string_view text);

}  // namespace dp::detail
