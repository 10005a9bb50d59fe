#include "socket_tables.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "dp/unique_fd.hpp"

namespace dp::spank {

void read_socket_table(const char* path, size_t max_bytes, SocketTables& into) {
  const UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return;
  const size_t start = into.text.size();
  into.text.resize(start + max_bytes);
  size_t got = 0;
  while (got < max_bytes) {
    const ssize_t n = read(fd.get(), into.text.data() + start + got, max_bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  char probe = 0;
  const bool more = got == max_bytes && read(fd.get(), &probe, 1) == 1;
  into.text.resize(start + got);
  if (!more) return;
  // A line cut in the middle would be read as another socket.
  const size_t last = into.text.rfind('\n');
  into.text.resize(last == std::string::npos || last < start ? start : last + 1);
  into.cut = true;
}

PortHolders port_holders_here(int lo, int hi) {
  SocketTables t;
  for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    read_socket_table(path, kMaxSocketTableBytes, t);
    if (!t.text.empty() && t.text.back() != '\n') t.text += '\n';
  }
  return port_holders(t.text, lo, hi, t.cut);
}

std::string port_holder_text(int port) {
  const PortHolders h = port_holders_here(port, port);
  std::string uids;
  for (const auto& [uid, n] : h.by_uid)
    uids += (uids.empty() ? "uid " : ", uid ") + std::to_string(uid);
  if (!uids.empty()) return "held by " + uids;
  return std::string(
             "by a socket that does not listen: the kernel's socket tables name only "
             "listeners' owners") +
         (h.partial ? ", and were too long to read whole" : "");
}

}  // namespace dp::spank
