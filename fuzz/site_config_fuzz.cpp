// libFuzzer target: the site config, the plugin line's words root reads in
// every slurmstepd (parse_site_config), split on spaces as Slurm does.
// Never a crash; an accepted port range is within 1..65535 and ordered.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dp/site_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  while (!text.empty() && words.size() < 64) {
    const size_t sp = text.find(' ');
    if (sp != 0) words.emplace_back(text.substr(0, sp));
    if (sp == std::string_view::npos) break;
    text = text.substr(sp + 1);
  }
  auto c = dp::parse_site_config(words);
  if (c && (c->port_min < 1 || c->port_max > 65535 || c->port_min > c->port_max)) std::abort();
  return 0;
}
