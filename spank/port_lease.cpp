#include "port_lease.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dp/master_port.hpp"

namespace dp::spank {

namespace {

// Field 22 of /proc/<pid>/stat: start time in clock ticks; tells a live
// process from a recycled pid.
std::string start_time_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close_paren = all.rfind(')');
  if (close_paren == std::string::npos) return {};
  std::istringstream rest(all.substr(close_paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
  }
  return field;
}

bool lease_is_stale(const std::string& path) {
  std::ifstream f(path);
  long pid = 0;
  std::string start;
  if (!(f >> pid >> start) || pid <= 0) return true;  // torn or foreign: reclaim
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  return start_time_of(static_cast<pid_t>(pid)) != start;
}

Result<void> make_dirs(const std::string& dir) {
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      return make_error(Errc::unavailable,
                        "cannot create the port lease directory " + part + ": " + std::strerror(errno) +
                            "; set lease_dir= in plugstack.conf to a writable local directory");
  }
  return {};
}

bool try_lease(const std::string& path, int port, const std::string& content) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) {
      bool ok = write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
      close(fd);
      if (ok && port_binds(port)) return true;
      unlink(path.c_str());
      return false;
    }
    if (errno != EEXIST || !lease_is_stale(path)) return false;
    unlink(path.c_str());
  }
  return false;
}

}  // namespace

bool port_binds(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  // The way PyTorch's TCPStore and most servers bind: TIME_WAIT leftovers ok.
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

Result<PortLease> lease_master_port(const SiteConfig& site, uint64_t seed, const std::string& tag) {
  DP_TRY(make_dirs(site.lease_dir));
  const std::string lock_path = site.lease_dir + "/.lock";
  int lock = open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0)
    return make_error(Errc::unavailable, "cannot open " + lock_path + ": " + std::strerror(errno));
  while (flock(lock, LOCK_EX) != 0 && errno == EINTR) {
  }
  const pid_t self = getpid();
  const std::string content =
      std::to_string(self) + " " + start_time_of(self) + " " + tag + "\n";
  PortLease lease;
  auto port = pick_port(site.port_min, site.port_max, seed, [&](int p) {
    std::string path = site.lease_dir + "/" + std::to_string(p);
    if (!try_lease(path, p, content)) return false;
    lease.path = path;
    return true;
  });
  close(lock);  // releases the flock
  DP_TRY(port);
  lease.port = *port;
  return lease;
}

void release_port_lease(const std::string& path) {
  if (path.empty()) return;
  // Only our own lease: a reclaimed-and-retaken file belongs to someone else.
  std::ifstream f(path);
  long pid = 0;
  if (f >> pid && pid == getpid()) unlink(path.c_str());
}

}  // namespace dp::spank
