#include "port_lease.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "dp/master_port.hpp"
#include "dp/params.hpp"
#include "dp/port_holders.hpp"
#include "dp/random_bytes.hpp"
#include "proc_stat.hpp"

namespace dp::spank {

namespace {

using Clock = std::chrono::steady_clock;

// Field 22 of /proc/<pid>/stat as written in a lease: tells a live process
// from a recycled pid ("" when the process is gone).
std::string start_time_of(pid_t pid) {
  const auto ticks = agent::read_start_ticks(static_cast<int>(pid));
  return ticks ? std::to_string(*ticks) : std::string();
}

struct LeaseFile {
  long pid = 0;
  std::string start;
  long uid = -1;  // -1: written by a release that did not record it
};

// Reads a lease file of the folder (regular file, no symlink, bounded).
std::optional<LeaseFile> read_lease(int dir, const std::string& name) {
  const int fd = openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  char buf[256];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return LeaseFile{};  // empty or torn: stale
  std::istringstream in(std::string(buf, static_cast<size_t>(n)));
  std::string pid, uid;
  LeaseFile f;
  in >> pid >> f.start >> uid;
  // A pid that is no whole number leaves the lease stale (pid 0).
  if (auto p = parse_whole_number(pid, 1, std::numeric_limits<pid_t>::max())) f.pid = *p;
  if (auto u = parse_whole_number(uid, 0, std::numeric_limits<uid_t>::max())) f.uid = *u;
  return f;
}

bool is_stale(const LeaseFile& f) {
  if (f.pid <= 0) return true;
  if (kill(static_cast<pid_t>(f.pid), 0) != 0 && errno == ESRCH) return true;
  return start_time_of(static_cast<pid_t>(f.pid)) != f.start;
}

bool all_digits(const char* s) {
  if (*s == '\0') return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

// Live leases of `owner`; stale leases met on the way are removed (the
// caller holds the folder's lock).
int live_leases_of(int dir, uid_t owner) {
  const int copy = dup(dir);
  if (copy < 0) return 0;
  DIR* d = fdopendir(copy);
  if (d == nullptr) {
    close(copy);
    return 0;
  }
  int count = 0;
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    if (!all_digits(e->d_name)) continue;
    auto f = read_lease(dir, e->d_name);
    if (!f) continue;
    if (is_stale(*f)) stale.emplace_back(e->d_name);
    else if (f->uid == static_cast<long>(owner)) ++count;
  }
  closedir(d);
  for (const auto& name : stale) unlinkat(dir, name.c_str(), 0);
  return count;
}

// A socket bound to the port on every address and not listening: while we
// hold it nobody else can bind the port (no SO_REUSEADDR on our side, and
// SO_REUSEPORT would need our uid). A port only in TIME_WAIT binds with
// SO_REUSEADDR, which still keeps out every binder without it.
int bind_port(int port, bool reuse) {
  for (int family : {AF_INET6, AF_INET}) {
    const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;  // no IPv6 on this node: IPv4 alone
    int one = 1, zero = 0;
    if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (family == AF_INET6) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 too
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      a.sin6_port = htons(static_cast<uint16_t>(port));
      rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = htons(static_cast<uint16_t>(port));
      rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc == 0) return fd;
    close(fd);
    if (errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL) return -1;
  }
  return -1;
}

}  // namespace

int hold_port(int port) {
  const int fd = bind_port(port, false);
  return fd >= 0 ? fd : bind_port(port, true);
}

namespace {

// A new lease file `name` holding content: 1 made, 0 taken already, -1 an
// error (nothing left behind).
int new_lease_file(int dir, const std::string& name, const std::string& content) {
  const int fd =
      openat(dir, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return errno == EEXIST ? 0 : -1;
  const bool ok = write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  close(fd);
  if (ok) return 1;
  unlinkat(dir, name.c_str(), 0);
  return -1;
}

// Creates the lease file for `port` (reclaiming a stale one) and binds the
// port; returns the holding socket, or -1 when either is taken.
int try_lease(int dir, int port, const std::string& content) {
  const std::string name = std::to_string(port);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int made = new_lease_file(dir, name, content);
    if (made < 0) return -1;
    if (made == 1) {
      const int hold = hold_port(port);
      if (hold >= 0) return hold;
      unlinkat(dir, name.c_str(), 0);
      return -1;
    }
    auto f = read_lease(dir, name);
    if (f && !is_stale(*f)) return -1;
    unlinkat(dir, name.c_str(), 0);
  }
  return -1;
}

Error dir_error(const std::string& path, const std::string& what) {
  return make_error(Errc::unavailable, "port lease folder " + path + ": " + what +
                                           "; set lease_dir= in plugstack.conf to a local folder "
                                           "only root can write (default /run/slurm-dp/ports)");
}

// Takes the folder's lock without ever blocking for longer than `wait`:
// slurmstepd must not hang on a lock, whoever holds it.
Result<int> lock_folder(int dir, const std::string& path, std::chrono::milliseconds wait) {
  const int fd = openat(dir, ".lock", O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return dir_error(path, std::string("cannot open .lock: ") + std::strerror(errno));
  const auto deadline = Clock::now() + wait;
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int e = errno;
      close(fd);
      return dir_error(path, std::string("cannot lock .lock: ") + std::strerror(e));
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded retry
  }
  close(fd);
  return make_error(Errc::timeout,
                    "the MASTER_PORT lease lock " + path +
                        "/.lock was held by another process for " + std::to_string(wait.count()) +
                        " ms; find it with 'fuser " + path +
                        "/.lock' (a stuck slurmstepd?), or pass --dp-master-port=PORT");
}

}  // namespace

PortLease& PortLease::operator=(PortLease&& o) noexcept {
  if (this != &o) {
    release();
    port_ = o.port_;
    dir_fd_ = o.dir_fd_;
    name_ = std::move(o.name_);
    hold_fd_ = o.hold_fd_;
    o.dir_fd_ = o.hold_fd_ = -1;
    o.port_ = 0;
  }
  return *this;
}

void PortLease::drop_hold() noexcept {
  if (hold_fd_ >= 0) close(hold_fd_);
  hold_fd_ = -1;
}

void PortLease::release() noexcept {
  drop_hold();
  if (dir_fd_ < 0) return;
  // Only our own lease: a reclaimed-and-retaken file belongs to someone else.
  auto f = read_lease(dir_fd_, name_);
  if (f && f->pid == getpid()) unlinkat(dir_fd_, name_.c_str(), 0);
  close(dir_fd_);
  dir_fd_ = -1;
}

Result<int> open_lease_dir(const std::string& path) {
  if (path.empty() || path.front() != '/') return dir_error(path, "not an absolute path");
  std::vector<std::string> parts;
  for (size_t pos = 0; pos < path.size();) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    if (next > pos) parts.push_back(path.substr(pos, next - pos));
    pos = next + 1;
  }
  if (parts.empty()) return dir_error(path, "not a folder of its own");
  int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return dir_error(path, std::string("cannot open /: ") + std::strerror(errno));
  const uid_t me = geteuid();
  std::string shown;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    shown += "/" + parts[i];
    if (parts[i] == "." || parts[i] == "..") {
      close(fd);
      return dir_error(path, "'.' and '..' are not allowed");
    }
    if (mkdirat(fd, parts[i].c_str(), last ? 0700 : 0755) != 0 && errno != EEXIST) {
      const int e = errno;
      close(fd);
      return dir_error(path, "cannot create " + shown + ": " + std::strerror(e));
    }
    const int next = openat(fd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int e = errno;
    close(fd);
    if (next < 0)
      return dir_error(path,
                       shown + (e == ELOOP || e == ENOTDIR ? " is a symlink or not a folder"
                                                           : ": " + std::string(std::strerror(e))));
    fd = next;
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      close(fd);
      return dir_error(path, "cannot stat " + shown);
    }
    if (!last) {
      const bool others_write =
          (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0;
      if ((st.st_uid != 0 && st.st_uid != me) || others_write) {
        close(fd);
        return dir_error(path, shown + " may be changed by other users (owner uid " +
                                   std::to_string(st.st_uid) + ", mode " +
                                   std::to_string(st.st_mode & 07777) + ")");
      }
      continue;
    }
    if (st.st_uid != me) {
      close(fd);
      return dir_error(path, "owned by uid " + std::to_string(st.st_uid) + ", not by root");
    }
    // An older release created it 0755; it is ours, so tighten it.
    if ((st.st_mode & 077) != 0 && fchmod(fd, 0700) != 0) {
      close(fd);
      return dir_error(path, std::string("cannot make it private (0700): ") + std::strerror(errno));
    }
  }
  return fd;
}

bool port_binds(int port) {
  const int fd = bind_port(port, true);  // the way servers bind: TIME_WAIT leftovers ok
  if (fd < 0) return false;
  close(fd);
  return true;
}

// Where the scan of the range starts. It only spreads leases over the range,
// so without the kernel's random bytes the clock and pid will do.
uint64_t random_seed() {
  uint64_t v = 0;
  if (auto r = random_bytes(sizeof v)) std::memcpy(&v, r->data(), sizeof v);
  else
    v = static_cast<uint64_t>(Clock::now().time_since_epoch().count()) ^
        (static_cast<uint64_t>(getpid()) << 32);
  return v;
}

// The site allows it (port_fallback=os): a port the OS chooses, bound, and
// leased like one of the range so the step's end releases it. (port, hold).
std::optional<std::pair<int, int>> lease_os_port(int dir, const std::string& content) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int hold = bind_port(0, false);
    if (hold < 0) return std::nullopt;
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    getsockname(hold, reinterpret_cast<sockaddr*>(&sa), &len);
    const int port =
        ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                                       : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
    if (new_lease_file(dir, std::to_string(port), content) == 1) return std::pair(port, hold);
    close(hold);
  }
  return std::nullopt;
}

// Every port of the range taken: by whom (root reads every socket's uid).
Error held_range_error(const SiteConfig& site, const Error& e) {
  std::string tables;
  for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(f);
    tables.append(std::istreambuf_iterator<char>(in), {});
    tables += '\n';
  }
  const std::string who = holders_text(port_holders(tables, site.port_min, site.port_max));
  if (who.empty()) return e;
  return make_error(e.code, "every MASTER_PORT of " + std::to_string(site.port_min) + "-" +
                                std::to_string(site.port_max) +
                                " on the master node is held (bound by " + who +
                                "); another user's process may be squatting the range: an admin "
                                "can end it; the documented setup on shared nodes is Slurm's "
                                "reserved ports (MpiParams=ports=); or pass --dp-master-port=PORT");
}

Result<PortLease> lease_master_port(const SiteConfig& site, const LeaseRequest& req) {
  auto dir = open_lease_dir(site.lease_dir);
  DP_TRY(dir);
  auto lock = lock_folder(*dir, site.lease_dir, req.lock_wait);
  if (!lock) {
    close(*dir);
    return lock.error();
  }
  if (req.max_per_user > 0) {
    const int held = live_leases_of(*dir, req.owner);
    if (held >= req.max_per_user) {
      close(*lock);
      close(*dir);
      return make_error(Errc::unavailable,
                        "uid " + std::to_string(req.owner) + " already holds " +
                            std::to_string(held) + " MASTER_PORT leases on this node (at most " +
                            std::to_string(req.max_per_user) +
                            " per user); end some steps or pass --dp-master-port=PORT");
    }
  }
  const pid_t self = getpid();
  const std::string content = std::to_string(self) + " " + start_time_of(self) + " " +
                              std::to_string(req.owner) + " " + req.tag + "\n";
  int hold = -1;
  auto port = pick_port(site.port_min, site.port_max, req.seed, [&](int p) {
    hold = try_lease(*dir, p, content);
    return hold >= 0;
  });
  close(*lock);  // releases the flock
  if (!port && site.port_fallback_os) {
    if (auto os = lease_os_port(*dir, content))
      return PortLease(os->first, *dir, std::to_string(os->first), os->second);
  }
  if (!port) {
    close(*dir);
    return held_range_error(site, port.error());
  }
  return PortLease(*port, *dir, std::to_string(*port), hold);
}

}  // namespace dp::spank
