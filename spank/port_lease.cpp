#include "port_lease.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "dp/bounded_read.hpp"
#include "dp/lease_share.hpp"
#include "dp/master_port.hpp"
#include "dp/params.hpp"
#include "dp/port_holders.hpp"
#include "dp/proc_stat.hpp"
#include "dp/random_bytes.hpp"
#include "dp/slurm_reservation.hpp"
#include "dp/sys_error.hpp"
#include "socket_tables.hpp"

namespace dp::spank {

namespace {

using Clock = std::chrono::steady_clock;

// Field 22 of /proc/<pid>/stat as written in a lease: tells a live process
// from a recycled pid ("" when the process is gone).
std::string start_time_of(pid_t pid) {
  const auto ticks = ::dp::read_start_ticks(static_cast<int>(pid));
  return ticks ? std::to_string(*ticks) : std::string();
}

struct LeaseFile {
  long pid = 0;
  std::string start;
  long uid = -1;    // -1: written by a release that did not record it
  std::string tag;  // the step's "<job>.<step>"
};

// Reads a lease file of the folder (regular file, no symlink, bounded).
std::optional<LeaseFile> read_lease(int dir, const std::string& name) {
  const UniqueFd fd(openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st {};
  char buf[256];
  ssize_t n = -1;
  if (fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) n = read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return LeaseFile{};  // empty or torn: stale
  std::istringstream in(std::string(buf, static_cast<size_t>(n)));
  std::string pid, uid;
  LeaseFile f;
  in >> pid >> f.start >> uid >> f.tag;
  // A pid that is no whole number leaves the lease stale (pid 0).
  if (auto p = parse_whole_number(pid, 1, std::numeric_limits<pid_t>::max())) f.pid = *p;
  if (auto u = parse_whole_number(uid, 0, std::numeric_limits<uid_t>::max())) f.uid = *u;
  return f;
}

bool is_stale(const LeaseFile& f) {
  if (f.pid <= 0) return true;
  // Signal 0 only asks whether the pid exists; the start time tells a reused one.
  if (kill(static_cast<pid_t>(f.pid), 0) != 0 && errno == ESRCH) return true;
  return start_time_of(static_cast<pid_t>(f.pid)) != f.start;
}

bool all_digits(const char* s) {
  if (*s == '\0') return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

// Who holds the folder's live leases: ports per uid, and the owner's per
// step (a lease without a tag counts as its process's). Stale leases met on
// the way are removed (the caller holds the folder's lock).
LeaseHolders count_leases(int dir, uid_t owner) {
  LeaseHolders counts;
  UniqueFd copy(dup(dir));
  if (!copy) return counts;
  UniqueDir d(std::move(copy));
  if (!d) return counts;
  ::lseek(d.fd(), 0, SEEK_SET);  // a copy shares the folder's offset with every earlier scan
  std::vector<std::string> stale;
  while (const dirent* e = d.next()) {
    if (!all_digits(e->d_name)) continue;
    auto f = read_lease(dir, e->d_name);
    if (!f) continue;
    if (is_stale(*f)) {
      stale.emplace_back(e->d_name);
      continue;
    }
    ++counts.by_uid[f->uid];
    if (f->uid == static_cast<long>(owner))
      ++counts.owner_steps[f->tag.empty() ? "pid " + std::to_string(f->pid) : f->tag];
  }
  for (const auto& name : stale) unlinkat(dir, name.c_str(), 0);
  return counts;
}

// A socket bound to the port on every address and not listening: while we
// hold it nobody else can bind the port (no SO_REUSEADDR on our side, and
// SO_REUSEPORT would need it on both). A port whose last connections are in
// TIME_WAIT binds only with SO_REUSEADDR (hold_port).
UniqueFd bind_port(int port, bool reuse) {
  for (int family : {AF_INET6, AF_INET}) {
    UniqueFd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) continue;  // no IPv6 on this node: IPv4 alone
    int one = 1, zero = 0;
    if (reuse) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (family == AF_INET6) {
      setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 too
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      a.sin6_port = htons(static_cast<uint16_t>(port));
      rc = bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = htons(static_cast<uint16_t>(port));
      rc = bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc == 0) return fd;
    if (errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL) return {};
  }
  return {};
}

}  // namespace

UniqueFd hold_port(int port) {
  if (UniqueFd fd = bind_port(port, false)) return fd;
  UniqueFd fd = bind_port(port, true);
  // Bound: off again, so that a later binder with SO_REUSEADDR cannot share
  // the port where the kernel checks each owner (Linux 6.18 here does; a
  // kernel that trusts the port's first binder may still let one share it:
  // rank 0's check names its listener).
  int zero = 0;
  if (fd) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &zero, sizeof zero);
  return fd;
}

LeaseRequest lease_request(const SiteConfig& site, uid_t owner, std::string tag) {
  LeaseRequest req;
  req.seed = random_seed();
  req.tag = std::move(tag);
  req.owner = owner;
  req.share_ports = site.lease_share_ports();
  req.unprivileged_start = unprivileged_port_start();
  return req;
}

std::string lease_need_text(const LeaseRequest& req) {
  if (req.dp_port_count == 0) return "MASTER_PORT";
  const std::string option = "--dp-ports=" + std::to_string(req.dp_port_count);
  if (req.master_fixed) return option + " (" + std::to_string(req.dp_port_count) + " ports)";
  return "MASTER_PORT and " + option + " (" + std::to_string(req.dp_port_count + 1) + " ports)";
}

namespace {

// A new lease file `name` holding content: 1 made, 0 taken already, -1 an
// error (nothing left behind).
int new_lease_file(int dir, const std::string& name, const std::string& content) {
  const UniqueFd fd(
      openat(dir, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return errno == EEXIST ? 0 : -1;
  if (write(fd.get(), content.data(), content.size()) == static_cast<ssize_t>(content.size()))
    return 1;
  unlinkat(dir, name.c_str(), 0);
  return -1;
}

// Creates the lease file for `port` (reclaiming a stale one) and binds the
// port; returns the holding socket, empty when either is taken.
UniqueFd try_lease(int dir, int port, const std::string& content) {
  const std::string name = std::to_string(port);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int made = new_lease_file(dir, name, content);
    if (made < 0) return {};
    if (made == 1) {
      UniqueFd hold = hold_port(port);
      if (!hold) unlinkat(dir, name.c_str(), 0);
      return hold;
    }
    auto f = read_lease(dir, name);
    if (f && !is_stale(*f)) return {};
    unlinkat(dir, name.c_str(), 0);
  }
  return {};
}

Error dir_error(const std::string& path, const std::string& what) {
  return make_error(Errc::unavailable, "port lease folder " + path + ": " + what +
                                           "; set lease_dir= in plugstack.conf to a local folder "
                                           "only root can write (default /run/slurm-dp/ports)");
}

// Takes the folder's lock without ever blocking for longer than `wait`:
// slurmstepd must not hang on a lock, whoever holds it.
Result<UniqueFd> lock_folder(int dir, const std::string& path, std::chrono::milliseconds wait) {
  UniqueFd fd(openat(dir, ".lock", O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return dir_error(path, std::string("cannot open .lock: ") + dp::errno_text());
  const auto deadline = Clock::now() + wait;
  for (;;) {
    if (flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return fd;
    if (errno != EWOULDBLOCK && errno != EINTR)
      return dir_error(path, std::string("cannot lock .lock: ") + dp::errno_text());
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded retry
  }
  return make_error(Errc::timeout,
                    "the MASTER_PORT lease lock " + path +
                        "/.lock was held by another process for " + std::to_string(wait.count()) +
                        " ms; find it with 'fuser " + path +
                        "/.lock' (a stuck slurmstepd?), or pass --dp-master-port=PORT");
}

// The folder's path split into its components ("." and ".." refused).
Result<std::vector<std::string>> path_parts(const std::string& path) {
  if (path.empty() || path.front() != '/') return dir_error(path, "not an absolute path");
  std::vector<std::string> parts;
  for (size_t pos = 0; pos < path.size();) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    if (next > pos) parts.push_back(path.substr(pos, next - pos));
    pos = next + 1;
  }
  if (parts.empty()) return dir_error(path, "not a folder of its own");
  for (const auto& p : parts)
    if (p == "." || p == "..") return dir_error(path, "'.' and '..' are not allowed");
  return parts;
}

// One component's checks: a parent root's (or ours) and not writable by
// others unless sticky; the folder itself ours, and made private.
Result<void> check_component(int fd, const std::string& path, const std::string& shown, bool last) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return dir_error(path, "cannot stat " + shown);
  const uid_t me = geteuid();
  if (!last) {
    const bool others_write =
        (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0;
    if ((st.st_uid != 0 && st.st_uid != me) || others_write)
      return dir_error(path, shown + " may be changed by other users (owner uid " +
                                 std::to_string(st.st_uid) + ", mode " +
                                 std::to_string(st.st_mode & 07777) + ")");
    return {};
  }
  if (st.st_uid != me)
    return dir_error(path, "owned by uid " + std::to_string(st.st_uid) + ", not by root");
  // An older release created it 0755; it is ours, so tighten it.
  if ((st.st_mode & 077) != 0 && fchmod(fd, 0700) != 0)
    return dir_error(path, std::string("cannot make it private (0700): ") + dp::errno_text());
  return {};
}

}  // namespace

PortLease& PortLease::operator=(PortLease&& o) noexcept {
  if (this != &o) {
    release();
    port_ = std::exchange(o.port_, 0);
    dir_ = std::move(o.dir_);
    name_ = std::move(o.name_);
    hold_ = std::move(o.hold_);
  }
  return *this;
}

void PortLease::release() noexcept {
  drop_hold();
  if (!dir_) return;
  // Only our own lease: a reclaimed-and-retaken file belongs to someone else.
  auto f = read_lease(dir_.get(), name_);
  if (f && f->pid == getpid()) unlinkat(dir_.get(), name_.c_str(), 0);
  dir_.reset();
}

Result<UniqueFd> open_lease_dir(const std::string& path) {
  auto parts = path_parts(path);
  DP_TRY(parts);
  UniqueFd fd(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return dir_error(path, std::string("cannot open /: ") + dp::errno_text());
  std::string shown;
  for (size_t i = 0; i < parts->size(); ++i) {
    const bool last = i + 1 == parts->size();
    const std::string& part = (*parts)[i];
    shown += "/" + part;
    if (mkdirat(fd.get(), part.c_str(), last ? 0700 : 0755) != 0 && errno != EEXIST)
      return dir_error(path, "cannot create " + shown + ": " + dp::errno_text());
    UniqueFd next(openat(fd.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    const int e = errno;
    if (!next)
      return dir_error(path, shown + (e == ELOOP || e == ENOTDIR ? " is a symlink or not a folder"
                                                                 : ": " + dp::errno_text(e)));
    fd = std::move(next);
    auto ok = check_component(fd.get(), path, shown, last);
    DP_TRY(ok);
  }
  return fd;
}

int unprivileged_port_start() {
  const std::string text =
      read_bounded_at(AT_FDCWD, "/proc/sys/net/ipv4/ip_unprivileged_port_start", 32);
  const std::string_view line = std::string_view(text).substr(0, text.find('\n'));
  auto start = parse_whole_number(line, 0, 65536);
  return start ? static_cast<int>(*start) : kUnprivilegedPortStart;
}

bool port_binds(int port) {
  return static_cast<bool>(bind_port(port, true));  // the way servers bind: TIME_WAIT ok
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

namespace {

// The site allows it (port_fallback=os): a port the OS chooses, bound, and
// leased like one of the range so the step's end releases it.
std::optional<std::pair<int, UniqueFd>> lease_os_port(int dir, const std::string& content,
                                                      int unprivileged_start) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    UniqueFd hold = bind_port(0, false);
    if (!hold) return std::nullopt;
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    getsockname(hold.get(), reinterpret_cast<sockaddr*>(&sa), &len);
    const int port =
        ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                                       : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
    if (!privileged_port(port, unprivileged_start) &&
        new_lease_file(dir, std::to_string(port), content) == 1)
      return std::pair(port, std::move(hold));
  }
  return std::nullopt;
}

// What a step whose ports do not fit can do: fewer --dp-ports, a fixed
// MASTER_PORT, a wider range.
std::string range_fix(const LeaseRequest& req) {
  std::string fix = req.dp_port_count > 0 ? "ask for fewer with --dp-ports=N, " : "";
  if (req.dp_port_count == 0 && !req.master_fixed) fix += "pass --dp-master-port=PORT, ";
  return fix + "end some steps on this node, or ask the admin to widen ports= in plugstack.conf";
}

// Every port of the range taken: by whom. slurm-dp's own holds do not
// listen, so the kernel's tables (socket_tables.hpp, bounded) name only other
// binders; the lease files name the steps' users.
Error held_range_error(const SiteConfig& site, const LeaseRequest& req,
                       const LeaseHolders& leased) {
  const std::string range = std::to_string(site.port_min) + "-" + std::to_string(site.port_max);
  const PortHolders h = port_holders_here(site.port_min, site.port_max);
  const std::string who = holders_text(h);
  const std::string leases =
      leased.by_uid.empty() ? std::string() : "; leased: " + lease_holders_text(leased);
  if (who.empty() || (h.by_uid.size() == 1 && h.by_uid.begin()->first == req.owner)) {
    const std::string what =
        req.dp_port_count == 0 ? "no free MASTER_PORT in " + range + " on the master node"
                               : "no free ports in " + range +
                                     " on the master node for this step's " + lease_need_text(req);
    return make_error(Errc::unavailable, what + " (each port is leased to a step or bound" +
                                             leases + "); " + range_fix(req));
  }
  return make_error(
      Errc::unavailable,
      "every port of " + range + " on the master node is held (bound by " + who + leases +
          "), none left for " +
          (req.dp_port_count == 0 ? "MASTER_PORT" : "the step's " + lease_need_text(req)) +
          "; another user's process may be squatting the range: an admin can end "
          "it; the documented setup on shared nodes is Slurm's reserved ports "
          "(MpiParams=ports=); or " +
          range_fix(req));
}

// The folder's lock, once the user's share has room for `count` more ports.
// A user's previous step may hold its leases a moment past its end (its
// slurmstepd releases them as it exits, while the next srun's starts): the
// share is looked at again for up to kShareGrace before it refuses.
constexpr std::chrono::milliseconds kShareGrace{1'000};
Result<UniqueFd> lock_share(const UniqueFd& dir, const SiteConfig& site, const LeaseRequest& req,
                            int count) {
  const auto until = Clock::now() + kShareGrace;
  for (;;) {
    auto lock = lock_folder(dir.get(), site.lease_dir, req.lock_wait);
    DP_TRY(lock);
    auto room =
        check_lease_share(count_leases(dir.get(), req.owner),
                          {req.owner, req.tag, req.share_ports, count, lease_need_text(req)});
    if (room) return lock;
    if (Clock::now() >= until) return room.error();
    lock->reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // bounded by kShareGrace
  }
}

// `count` leases for the step, under one hold of the folder's lock.
Result<std::vector<PortLease>> take_leases(const SiteConfig& site, const LeaseRequest& req,
                                           int count) {
  if (count == 0) return std::vector<PortLease>{};
  auto dir = open_lease_dir(site.lease_dir);
  DP_TRY(dir);
  auto lock = lock_share(*dir, site, req, count);
  DP_TRY(lock);
  const pid_t self = getpid();
  const std::string content = std::to_string(self) + " " + start_time_of(self) + " " +
                              std::to_string(req.owner) + " " + req.tag + "\n";
  std::vector<PortLease> leases;
  while (static_cast<int>(leases.size()) < count) {
    UniqueFd hold;
    // The same start: the step's ports lie together.
    auto port = pick_port(site.port_min, site.port_max, req.seed, [&](int p) {
      if (privileged_port(p, req.unprivileged_start)) return false;
      hold = try_lease(dir->get(), p, content);
      return static_cast<bool>(hold);
    });
    if (!port && site.port_fallback_os)
      if (auto os = lease_os_port(dir->get(), content, req.unprivileged_start)) {
        port = os->first;
        hold = std::move(os->second);
      }
    if (!port) return held_range_error(site, req, count_leases(dir->get(), req.owner));
    UniqueFd own(dup(dir->get()));
    if (!own) return dir_error(site.lease_dir, std::string("dup: ") + dp::errno_text());
    leases.emplace_back(*port, std::move(own), std::to_string(*port), std::move(hold));
  }
  return leases;
}

}  // namespace

Result<PortLease> lease_master_port(const SiteConfig& site, const LeaseRequest& req) {
  auto one = take_leases(site, req, 1);
  DP_TRY(one);
  return std::move(one->front());
}

Result<std::vector<PortLease>> lease_ports(const SiteConfig& site, const LeaseRequest& req) {
  return take_leases(site, req, req.dp_port_count + (req.master_fixed ? 0 : 1));
}

}  // namespace dp::spank
