// Connecting a TCP socket with a deadline (the retry loop lives in the client).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "dp/result.hpp"

namespace dp::rdv {

using Deadline = std::chrono::steady_clock::time_point;

// One attempt over every address of host; returns a connected, non-blocking
// socket with TCP_NODELAY, or Errc::connection / Errc::timeout.
Result<int> tcp_connect_once(const std::string& host, uint16_t port, Deadline deadline);
// Writes all of data before the deadline (socket is non-blocking).
Result<void> write_all(int fd, const char* data, size_t n, Deadline deadline);
int ms_until(Deadline d);

}  // namespace dp::rdv
