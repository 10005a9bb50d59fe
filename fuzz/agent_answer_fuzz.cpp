// libFuzzer target: root's reading of the node agent's answer line
// (agent/launch_contract.cpp, parse_answer), written by a process of the
// job's user. Whatever it gets, root never crashes, and what it accepts is
// within bounds: a port in range, a socket name of the allowed characters,
// a master failure's node one word, and it reads back the same once formatted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "launch_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  auto a = dp::agent::parse_answer(line);
  if (!a) return 0;
  if (a->port < 0 || a->port > 65535) std::abort();
  if (a->socket.size() > dp::agent::kMaxSocketName) std::abort();
  if (a->master_failure && a->master_failure->node.find(' ') != std::string::npos) std::abort();
  std::string again = dp::agent::format_answer(*a);
  if (!again.empty() && again.back() == '\n') again.pop_back();
  if (!dp::agent::parse_answer(again)) std::abort();  // what root accepts, it can say again
  return 0;
}
