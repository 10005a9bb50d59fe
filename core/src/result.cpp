#include "dp/result.hpp"

#include "dp/env_names.hpp"

#include <cstdlib>
#include <string_view>

namespace dp {

bool debug_enabled() {
  const char* debug = std::getenv(env::kDebug);
  return debug != nullptr && *debug != '\0' && std::string_view(debug) != "0";
}

std::string describe(const Error& e) {
  if (!debug_enabled()) return e.message;
  std::string out = e.message;
  for (const auto& p : e.trail)
    out += "\n  -> " + std::string(p.file) + ":" + std::to_string(p.line);
  return out;
}

const char* errc_name(Errc c) noexcept {
  switch (c) {
    case Errc::ok: return "ok";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::timeout: return "timeout";
    case Errc::aborted: return "aborted";
    case Errc::unauthorized: return "unauthorized";
    case Errc::protocol: return "protocol";
    case Errc::limit: return "limit";
    case Errc::not_found: return "not_found";
    case Errc::conflict: return "conflict";
    case Errc::connection: return "connection";
    case Errc::unavailable: return "unavailable";
    case Errc::internal: return "internal";
  }
  return "unknown";
}

}  // namespace dp
