#include "dp/result.hpp"

namespace dp {

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
