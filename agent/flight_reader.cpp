#include "flight_reader.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "dp/bounded_read.hpp"
#include "dp/nccl_watch.hpp"
#include "dp/sys_error.hpp"

namespace dp::agent {
namespace {

using Clock = std::chrono::steady_clock;

UniqueFd hold_loopback_port(int& port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int one = 1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  // SO_REUSEPORT alone: the job's user's NCCL shares it (its uid), nobody
  // else (with SO_REUSEADDR on our side, anyone could bind beside a socket
  // that does not listen).
  if (!fd || ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
      ::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return UniqueFd();
  port = ntohs(sa.sin_port);
  return fd;
}

int64_t wall_ns(const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

int64_t wall_now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return wall_ns(t);
}

// A file's times come from the kernel's coarse clock, a tick behind.
constexpr int64_t kMtimeSlackNs = 100'000'000;

// Writes the rank's pipe; empty when the rank will dump, else why not.
std::string trigger(int dir_fd, const std::string& pipe) {
  struct stat st {};
  if (::fstatat(dir_fd, pipe.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISFIFO(st.st_mode))
    return "no pipe (not a PyTorch NCCL program, or its flight recorder is off)";
  const UniqueFd fd(::openat(dir_fd, pipe.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
  if (!fd)
    return errno == ENXIO ? "its pipe has no reader" : std::string("its pipe: ") + errno_text();
  if (::write(fd.get(), "1\n", 2) != 2) return std::string("its pipe: ") + errno_text();
  return {};
}

// The rank's dump written since `since_ns`, once whole: its places. False
// while none is (yet); `why` then says what is wrong.
bool take_dump(int dir_fd, int64_t since_ns, stacks::RankFlight& r, std::string& why) {
  const std::string dump = flight_dump_name(r.rank);
  struct stat st {};
  if (::fstatat(dir_fd, dump.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      wall_ns(st.st_mtim) < since_ns - kMtimeSlackNs) {
    why = "no dump within the read's time";
    return false;
  }
  if (!S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(kMostDumpBytes)) {
    why = "its dump is not a regular file of at most 16 MiB";
    return false;
  }
  const std::string bytes = read_bounded_at(dir_fd, dump.c_str(), kMostDumpBytes);
  auto d = stacks::read_flight_dump(bytes);
  if (!d) {
    why = "its dump: " + d.error().message;
    return false;
  }
  why.clear();
  r.groups = stacks::group_places(*d, wall_ns(st.st_mtim));
  r.arrivals = stacks::recent_arrivals(*d, kMostArrivals);
  return true;
}

}  // namespace

FlightPlaces FlightPlaces::create(uint32_t job, uint32_t step, std::vector<std::string>& notes) {
  FlightPlaces p;
  std::string name =
      "/tmp/slurm-dp-fr." + std::to_string(job) + "." + std::to_string(step) + ".XXXXXX";
  if (::mkdtemp(name.data())) p.dir_ = name;  // 0700
  else notes.push_back(std::string("no folder for the flight recorders' dumps: ") + errno_text());
  p.ras_hold_ = hold_loopback_port(p.ras_port_);
  if (!p.ras_hold_) {
    p.ras_port_ = 0;
    notes.push_back(std::string("no port held for NCCL's RAS: ") + errno_text());
  }
  return p;
}

FlightPlaces::FlightPlaces(FlightPlaces&& o) noexcept
    : dir_(std::move(o.dir_)), ras_port_(o.ras_port_), ras_hold_(std::move(o.ras_hold_)) {
  o.dir_.clear();
}

FlightPlaces& FlightPlaces::operator=(FlightPlaces&& o) noexcept {
  if (this != &o) {
    remove();
    dir_ = std::move(o.dir_);
    o.dir_.clear();
    ras_port_ = o.ras_port_;
    ras_hold_ = std::move(o.ras_hold_);
  }
  return *this;
}

FlightPlaces::~FlightPlaces() { remove(); }

// The folder and what the ranks left in it (their pipes and dumps; nothing
// deeper: the folder is ours and holds only files).
void FlightPlaces::remove() {
  if (dir_.empty()) return;
  if (UniqueDir d(dir_.c_str()); d) {
    while (const dirent* e = d.next())
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        ::unlinkat(d.fd(), e->d_name, 0);
  }
  ::rmdir(dir_.c_str());
  dir_.clear();
}

std::vector<stacks::RankFlight> read_flights(const std::string& dir,
                                             const std::vector<TaskStart>& ranks,
                                             Clock::time_point deadline, FlightTriggers& triggers) {
  std::vector<stacks::RankFlight> out;
  const UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  std::vector<std::pair<size_t, int64_t>> waiting;  // (rank's entry, asked since)
  std::vector<int64_t> earlier(ranks.size(), -1);
  for (const TaskStart& t : ranks) {
    stacks::RankFlight r;
    r.rank = t.rank;
    r.pid = t.pid;
    const int64_t now = wall_now_ns();
    r.unread = dir_fd ? trigger(dir_fd.get(), flight_pipe_name(t.rank)) : "no folder for the dumps";
    if (r.unread.empty()) {
      if (auto it = triggers.find(t.rank); it != triggers.end()) earlier[out.size()] = it->second;
      triggers[t.rank] = now;
      waiting.emplace_back(out.size(), now);
    }
    out.push_back(std::move(r));
  }
  while (!waiting.empty()) {
    std::vector<std::pair<size_t, int64_t>> still;
    for (const auto& [i, since] : waiting)
      if (!take_dump(dir_fd.get(), since, out[i], out[i].unread)) still.emplace_back(i, since);
    waiting = std::move(still);
    if (waiting.empty() || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // None in time: the dump the previous read asked for, as of when it was written.
  for (const auto& [i, since] : waiting)
    if (earlier[i] >= 0) take_dump(dir_fd.get(), earlier[i], out[i], out[i].unread);
  return out;
}

}  // namespace dp::agent
