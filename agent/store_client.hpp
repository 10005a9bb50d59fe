// Who a PyTorch store client is, for the line that names a refused request:
// PyTorch's client sends no rank, so the process holding the other end of
// the connection is found in /proc (the peer socket's inode from the kernel's
// socket table, dp/tcp_sockets.hpp, then this user's processes' descriptors)
// and its RANK read from its environment. Only on a refusal: it reads every
// process of the user.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dp::agent {

// ---- pure parsing, for the tests ----

// RANK in /proc/PID/environ's text (NUL-separated).
std::optional<int> environ_rank(std::string_view environ);
// "rank 3 (pid 812)", "pid 812 (no RANK)" or "a client not found in /proc".
std::string client_name(std::optional<int> pid, std::optional<int> rank);

// ---- the lookup ----

// The client at the other end of `fd`, an accepted local TCP connection,
// named as client_name() does.
std::string store_client_name(int fd);

}  // namespace dp::agent
