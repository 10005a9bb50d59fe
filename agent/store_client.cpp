#include "store_client.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <vector>

#include "dp/params.hpp"
#include "dp/unique_fd.hpp"
#include "proc_stat.hpp"

namespace dp::agent {
namespace {

constexpr size_t kTcpTableBytes = 32u << 20;       // /proc/net/tcp of a busy node
constexpr size_t kClientEnvironBytes = 64 * 1024;  // RANK may sit anywhere in it
constexpr size_t kClientProcs = 4096;              // the user's processes looked at

template <class T>
bool hex_field(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && end == s.data() + s.size();
}

// "0100007F:1F90" (/proc/net/tcp), or its IPv4-mapped IPv6 form
// "0000000000000000FFFF00000100007F:1F90" (/proc/net/tcp6: PyTorch's client
// may connect to an IPv4 address from an IPv6 socket).
bool parse_end(std::string_view s, TcpEnd& e) {
  constexpr std::string_view kMapped = "0000000000000000FFFF0000";
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view addr = s.substr(0, colon);
  if (addr.size() == kMapped.size() + 8 && addr.substr(0, kMapped.size()) == kMapped)
    addr.remove_prefix(kMapped.size());
  return addr.size() == 8 && hex_field(addr, e.addr) && hex_field(s.substr(colon + 1), e.port);
}

// A /proc file read whole, up to `max` bytes (its size is not known ahead).
std::string read_table(const char* path, size_t max) {
  std::string out;
  const UniqueFd file(::open(path, O_RDONLY | O_CLOEXEC));
  char buf[65536];
  ssize_t n = 0;
  while (file && out.size() < max && (n = ::read(file.get(), buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  return out;
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < line.size()) {
    const size_t start = line.find_first_not_of(' ', at);
    if (start == std::string_view::npos) break;
    const size_t end = line.find(' ', start);
    out.push_back(line.substr(start, end == std::string_view::npos ? end : end - start));
    at = end == std::string_view::npos ? line.size() : end;
  }
  return out;
}

// The pid among this user's processes with a descriptor on socket `inode`.
std::optional<int> socket_holder(uint64_t inode) {
  const std::string link = "socket:[" + std::to_string(inode) + "]";
  DIR* procs = ::opendir("/proc");
  if (!procs) return std::nullopt;
  std::optional<int> found;
  size_t looked = 0;
  while (const dirent* e = ::readdir(procs)) {
    const auto pid = parse_whole_number(e->d_name, 1, INT32_MAX);
    if (!pid) continue;
    const std::string dir = "/proc/" + std::string(e->d_name);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || st.st_uid != ::getuid()) continue;
    if (++looked > kClientProcs) break;
    DIR* fds = ::opendir((dir + "/fd").c_str());
    if (!fds) continue;
    char target[64];
    while (const dirent* f = ::readdir(fds)) {
      const ssize_t n = ::readlink((dir + "/fd/" + f->d_name).c_str(), target, sizeof target);
      if (n > 0 && std::string_view(target, static_cast<size_t>(n)) == link) {
        found = static_cast<int>(*pid);
        break;
      }
    }
    ::closedir(fds);
    if (found) break;
  }
  ::closedir(procs);
  return found;
}

std::optional<TcpEnd> end_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  if (rc != 0 || a.sin_family != AF_INET) return std::nullopt;
  return TcpEnd{a.sin_addr.s_addr, ntohs(a.sin_port)};
}

}  // namespace

std::optional<uint64_t> tcp_socket_inode(std::string_view table, TcpEnd local, TcpEnd remote) {
  while (!table.empty()) {
    const size_t nl = table.find('\n');
    const std::string_view line = table.substr(0, nl);
    table = nl == std::string_view::npos ? std::string_view() : table.substr(nl + 1);
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    const auto w = words(line);
    TcpEnd l, r;
    uint64_t inode = 0;
    if (w.size() < 10 || !parse_end(w[1], l) || !parse_end(w[2], r)) continue;
    if (l.addr != local.addr || l.port != local.port || r.addr != remote.addr ||
        r.port != remote.port)
      continue;
    const auto [end, ec] = std::from_chars(w[9].data(), w[9].data() + w[9].size(), inode);
    if (ec == std::errc() && end == w[9].data() + w[9].size() && inode != 0) return inode;
  }
  return std::nullopt;
}

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
  // The client's socket has the peer's end as its local one, ours as its remote.
  const auto theirs = end_of(fd, true), ours = end_of(fd, false);
  if (!theirs || !ours) return client_name(std::nullopt, std::nullopt);
  auto inode = tcp_socket_inode(read_table("/proc/self/net/tcp", kTcpTableBytes), *theirs, *ours);
  if (!inode)
    inode = tcp_socket_inode(read_table("/proc/self/net/tcp6", kTcpTableBytes), *theirs, *ours);
  const auto pid = inode ? socket_holder(*inode) : std::nullopt;
  if (!pid) return client_name(std::nullopt, std::nullopt);
  return client_name(pid, environ_rank(read_bounded("/proc/" + std::to_string(*pid) + "/environ",
                                                    kClientEnvironBytes)));
}

}  // namespace dp::agent
