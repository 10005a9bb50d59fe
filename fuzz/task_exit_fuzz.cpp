// libFuzzer target: the launch contract's other two parsers: the settings
// (parse_settings; root writes them, the agent reads them) and the task-exit
// records (parse_task_exit). Never a crash; an accepted exit record has a
// rank of 0 or more, and formatted again reads back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "launch_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto e = dp::agent::parse_task_exit(text)) {
    if (e->first < 0) std::abort();
    std::string line = dp::agent::format_task_exit(e->first, e->second);
    line.pop_back();  // the agent reads it a line at a time, without the newline
    const auto again = dp::agent::parse_task_exit(line);
    if (!again || *again != *e) std::abort();
  }
  if (auto s = dp::agent::parse_settings(text)) {
    if (!dp::agent::parse_settings(dp::agent::format_settings(*s))) std::abort();
  }
  return 0;
}
