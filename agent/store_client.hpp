// Who a PyTorch store client is, for the line that names a refused request:
// PyTorch's client sends no rank, so the process holding the other end of
// the connection is found in /proc (the socket's inode in this namespace's
// TCP tables, then this user's processes' descriptors) and its RANK read from
// its environment. Only on a refusal: it reads every process of the user.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dp::agent {

// ---- pure parsing, for the tests ----

// An IPv4 TCP endpoint as /proc/net/tcp writes it: the address as the
// in-memory (network order) 32-bit word, the port in host order.
struct TcpEnd {
  uint32_t addr = 0;
  uint16_t port = 0;
};
// The inode of the socket whose local end is `local` and remote end
// `remote`, from /proc/net/tcp's text, or tcp6's with the ends as
// IPv4-mapped addresses; nothing when no line matches.
std::optional<uint64_t> tcp_socket_inode(std::string_view table, TcpEnd local, TcpEnd remote);
// RANK in /proc/PID/environ's text (NUL-separated).
std::optional<int> environ_rank(std::string_view environ);
// "rank 3 (pid 812)", "pid 812 (no RANK)" or "a client not found in /proc".
std::string client_name(std::optional<int> pid, std::optional<int> rank);

// ---- the lookup ----

// The client at the other end of `fd`, an accepted local TCP connection,
// named as client_name() does.
std::string store_client_name(int fd);

}  // namespace dp::agent
