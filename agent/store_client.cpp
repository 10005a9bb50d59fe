#include "store_client.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "dp/bounded_read.hpp"
#include "dp/params.hpp"
#include "dp/proc_stat.hpp"
#include "dp/tcp_sockets.hpp"
#include "dp/unique_fd.hpp"

namespace dp::agent {
namespace {

constexpr size_t kClientEnvironBytes = 64 * 1024;  // RANK may sit anywhere in it
constexpr size_t kClientProcs = 4096;              // the user's processes looked at

// The pid among this user's processes with a descriptor on socket `inode`.
std::optional<int> socket_holder(uint64_t inode) {
  const std::string link = "socket:[" + std::to_string(inode) + "]";
  char target[64];
  for (int pid : processes_of(::getuid(), kClientProcs)) {
    const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
    UniqueDir fds(fd_dir.c_str());
    while (const dirent* f = fds ? fds.next() : nullptr) {
      const ssize_t n = ::readlinkat(fds.fd(), f->d_name, target, sizeof target);
      if (n > 0 && std::string_view(target, static_cast<size_t>(n)) == link) return pid;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> environ_rank(std::string_view environ) {
  while (!environ.empty()) {
    const size_t nul = environ.find('\0');
    const std::string_view var = environ.substr(0, nul);
    environ = nul == std::string_view::npos ? std::string_view() : environ.substr(nul + 1);
    if (var.rfind("RANK=", 0) != 0) continue;
    const auto n = parse_whole_number(var.substr(5), 0, INT32_MAX);
    return n ? std::optional<int>(static_cast<int>(*n)) : std::nullopt;
  }
  return std::nullopt;
}

std::string client_name(std::optional<int> pid, std::optional<int> rank) {
  if (!pid) return "a client not found in /proc";
  const std::string p = "pid " + std::to_string(*pid);
  return rank ? "rank " + std::to_string(*rank) + " (" + p + ")" : p + " (no RANK)";
}

std::string store_client_name(int fd) {
  const auto peer = local_tcp_peer(fd);
  const auto pid = peer && peer->inode != 0 ? socket_holder(peer->inode) : std::nullopt;
  if (!pid) return client_name(std::nullopt, std::nullopt);
  return client_name(pid, environ_rank(read_bounded("/proc/" + std::to_string(*pid) + "/environ",
                                                    kClientEnvironBytes)));
}

}  // namespace dp::agent
