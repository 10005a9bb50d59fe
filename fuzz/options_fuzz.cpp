// libFuzzer target: slurmstepd's reading of the step's options
// (DP_OPTIONS, parse_node_options) and of one option value (apply_option,
// as Slurm's remote option callbacks hand them over). What is accepted reads
// back the same once formatted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dp/options.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto o = dp::parse_node_options(text, "DP_OPTIONS")) {
    if (!dp::parse_node_options(dp::format_node_options(*o), "DP_OPTIONS")) std::abort();
  }
  // "NAME=VALUE": one option callback.
  const size_t eq = text.find('=');
  if (eq != std::string_view::npos) {
    dp::Options o;
    const std::string value(text.substr(eq + 1));
    if (value.find('\0') == std::string::npos)
      (void)dp::apply_option(o, text.substr(0, eq), value.c_str());
  }
  return 0;
}
