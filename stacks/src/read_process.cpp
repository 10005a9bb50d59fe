#include "dp/stacks/read_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "dp/bounded_read.hpp"
#include "dp/stacks/kernel_view.hpp"
#include "dp/stacks/python_walk.hpp"
#include "dp/stacks/runtime_address.hpp"
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"

namespace dp::stacks {
namespace {

ProcessStacks none(int pid, NoPython why, std::string detail) {
  ProcessStacks p;
  p.pid = pid;
  p.no_python = NoStacks{why, std::move(detail)};
  return p;
}

// The four uids of /proc/PID/status's "Uid:" line: real, effective, saved, file system.
std::optional<std::vector<uid_t>> status_uids(std::string_view status) {
  const size_t at = status.find("\nUid:");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view line = status.substr(at + 5, status.find('\n', at + 1) - at - 5);
  std::vector<uid_t> uids;
  while (!line.empty() && uids.size() < 4) {
    while (!line.empty() && (line[0] == '\t' || line[0] == ' ')) line.remove_prefix(1);
    uid_t u = 0;
    size_t n = 0;
    while (n < line.size() && line[n] >= '0' && line[n] <= '9') u = u * 10 + (line[n++] - '0');
    if (n == 0) break;
    uids.push_back(u);
    line.remove_prefix(n);
  }
  if (uids.size() != 4) return std::nullopt;
  return uids;
}

// The process behind `proc_dir` is still the one the caller means, and
// wholly its uid's; its /proc/PID/stat in `stat`.
std::optional<NoStacks> check_identity(int proc_dir, const Target& t,
                                       std::optional<TaskStat>& stat) {
  const std::string pid = "pid " + std::to_string(t.pid);
  stat = parse_task_stat(read_bounded_at(proc_dir, "stat", kStatFileBytes));
  if (!stat || stat->state == 'Z' || stat->state == 'X') {
    return NoStacks{NoPython::gone, pid + " has exited"};
  }
  if (stat->start_ticks != t.start_ticks) {
    return NoStacks{NoPython::gone, pid + " is another process now (it started at tick " +
                                        std::to_string(stat->start_ticks) + ", not " +
                                        std::to_string(t.start_ticks) + ")"};
  }
  auto uids = status_uids(read_bounded_at(proc_dir, "status", kStatusFileBytes));
  if (!uids) return NoStacks{NoPython::gone, pid + " has exited"};
  for (uid_t u : *uids) {
    if (u != t.uid) {
      return NoStacks{NoPython::not_allowed, pid + " runs as uid " + std::to_string(u) +
                                                 ", not uid " + std::to_string(t.uid) +
                                                 " alone: it is not read"};
    }
  }
  return std::nullopt;
}

bool pread_all(int fd, uint64_t offset, std::span<std::byte> out) {
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n =
        ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

bool same_file(int fd, const Mapping& m) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_ino == m.inode && major(st.st_dev) == m.dev_major &&
         minor(st.st_dev) == m.dev_minor;
}

// The file behind a mapping. The kernel prints its path relative to the
// reader's root where it can reach it (a chroot seen from the host:
// /srv/root/usr/bin/python3), else relative to the process's own namespace
// (a container: /usr/bin/python3, found under /proc/PID/root): both are
// tried, and a file is taken only when its device and inode are the mapping's.
MappedFile open_mapped_file(int proc_dir, const Mapping& m) {
  if (m.path.empty() || m.path[0] != '/') return {};
  for (const std::string& path : {"root" + m.path, m.path}) {
    auto fd = std::make_shared<UniqueFd>(::openat(proc_dir, path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (!*fd || !same_file(fd->get(), m) || ::fstat(fd->get(), &st) != 0) continue;
    return {[fd](uint64_t at, std::span<std::byte> out) { return pread_all(fd->get(), at, out); },
            std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                std::to_string(st.st_size) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
                std::to_string(st.st_ctim.tv_nsec)};
  }
  return {};
}

// The interpreters this process has read, for every reader of it.
InterpreterCache& interpreters() {
  static auto* cache = new InterpreterCache;
  return *cache;
}

// What earlier reads learned of a program image: the interpreter it runs and
// the type objects checked by name. The map is the costliest file of a read
// (the kernel formats a line for each of a few hundred mappings) and a type
// check two page reads, and neither answer changes while the image lives.
// An image is its pid, start time and image marks; kept for enough images
// for a node's ranks and workers.
struct ImageFacts {
  PythonProcess python;
  KnownTypes types;
};
RecentValues<ImageFacts, 512>& images() {
  static auto* cache = new RecentValues<ImageFacts, 512>;
  return *cache;
}

// Empty where the kernel hid the marks: such an image is not remembered.
std::string image_key(int pid, const TaskStat& stat) {
  if (stat.image_marks == decltype(stat.image_marks){}) return {};
  std::string key = std::to_string(pid) + ":" + std::to_string(stat.start_ticks);
  for (unsigned long long mark : stat.image_marks) key += ":" + std::to_string(mark);
  return key;
}

// `remembered`: the facts came from an earlier read of the image.
std::variant<ImageFacts, NoStacks> image_facts(int proc_dir, const std::string& image,
                                               const ReadLimits& limits, bool& remembered) {
  auto known = image.empty() ? std::nullopt : images().find(image);
  remembered = known.has_value();
  if (known) return *known;
  const std::string maps = read_bounded_at(proc_dir, "maps", limits.max_maps_bytes);
  if (maps.empty()) {
    return NoStacks{NoPython::unreadable, "its memory map is not readable to this user"};
  }
  auto found = find_interpreter(maps, mapped_files(proc_dir), &interpreters());
  if (auto* no = std::get_if<NoStacks>(&found)) return *no;
  return ImageFacts{std::get<PythonProcess>(found), {}};
}

ProcessStacks read_python(int proc_dir, int pid, const std::string& image,
                          const ReadLimits& limits) {
  bool remembered = false;
  auto found = image_facts(proc_dir, image, limits, remembered);
  if (auto* no = std::get_if<NoStacks>(&found)) return none(pid, no->why, no->detail);
  ImageFacts facts = std::get<ImageFacts>(found);
  facts.python.pid = pid;
  ProcessMemory memory(pid);
  const KnownTypes before = facts.types;
  ProcessStacks p = walk_python(memory, facts.python, limits.walk, &facts.types);
  if (!image.empty() && (!remembered || !(facts.types == before))) images().keep(image, facts);
  p.pid = pid;
  if (p.no_python && p.no_python->why == NoPython::unreadable && memory.first_errno() != 0) {
    p.no_python->detail += ": " + errno_text(memory.first_errno());
    if (memory.first_errno() == EPERM) {
      p.no_python->detail += " (not dumpable, or ptrace access to it is denied)";
    }
  }
  return p;
}

bool exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;  // readable: it exited; an error: no answer, so not ours
}

// Each Python thread gets its kernel view; threads the kernel lists without
// a Python thread state follow them; the main thread goes first.
void join_threads(ProcessStacks& p, std::vector<KernelThread> kernel) {
  std::vector<bool> used(kernel.size());
  for (auto& t : p.threads) {
    for (size_t i = 0; i < kernel.size(); ++i) {
      if (!used[i] && kernel[i].tid == t.tid) {
        t.kernel = kernel[i];
        used[i] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < kernel.size(); ++i) {
    if (used[i]) continue;
    ThreadStack t;
    t.tid = kernel[i].tid;
    t.kernel = std::move(kernel[i]);
    p.threads.push_back(std::move(t));
  }
  std::stable_partition(p.threads.begin(), p.threads.end(),
                        [&](const ThreadStack& t) { return t.tid == p.pid; });
}

}  // namespace

// The page at `start`, read whole the first time; null where it cannot be.
const std::byte* ProcessMemory::page(uint64_t start) {
  if (auto it = pages_.find(start); it != pages_.end()) return it->second.data();
  if (pages_.size() >= kPages) return nullptr;
  std::vector<std::byte> bytes(kPage);
  if (!read_now(start, bytes)) return nullptr;
  return pages_.emplace(start, std::move(bytes)).first->second.data();
}

bool ProcessMemory::read(uint64_t address, std::span<std::byte> out) {
  if (out.empty()) return true;
  if (out.size() - 1 > UINT64_MAX - address) return false;
  const uint64_t first = address - address % kPage, last = address + (out.size() - 1);
  // Reads of more than a few pages go straight through, as do pages that
  // cannot be read whole.
  if (last - first >= 4 * kPage) return read_now(address, out);
  size_t got = 0;
  for (uint64_t start = first; start <= last; start += kPage) {
    const std::byte* p = page(start);
    if (p == nullptr) return read_now(address, out);
    const uint64_t from = std::max(address, start);
    const size_t n = std::min<uint64_t>(start + kPage, last + 1) - from;
    std::memcpy(out.data() + got, p + (from - start), n);
    got += n;
  }
  return true;
}

bool ProcessMemory::read_now(uint64_t address, std::span<std::byte> out) {
  size_t got = 0;
  while (got < out.size()) {
    iovec local{out.data() + got, out.size() - got};
    iovec remote{reinterpret_cast<void*>(address + got), out.size() - got};
    const ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (n <= 0) {
      if (first_errno_ == 0) first_errno_ = n < 0 ? errno : EFAULT;
      return false;
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

MappedFileOpener mapped_files(int proc_dir) {
  return [proc_dir](const Mapping& m) { return open_mapped_file(proc_dir, m); };
}

std::optional<Target> target_now(int pid) {
  const UniqueFd proc(
      ::open(("/proc/" + std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!proc) return std::nullopt;
  auto stat = parse_task_stat(read_bounded_at(proc.get(), "stat", kStatFileBytes));
  auto uids = status_uids(read_bounded_at(proc.get(), "status", kStatusFileBytes));
  if (!stat || !uids) return std::nullopt;
  return Target{pid, stat->start_ticks, (*uids)[0]};
}

ProcessStacks read_process(const Target& t, const ReadLimits& limits) {
  if (t.uid != ::geteuid()) {
    return none(t.pid, NoPython::not_allowed,
                "pid " + std::to_string(t.pid) + " is uid " + std::to_string(t.uid) +
                    "'s; this reader runs as uid " + std::to_string(::geteuid()) +
                    " and reads only its own user's processes");
  }
  const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, t.pid, 0)));
  const UniqueFd proc(
      ::open(("/proc/" + std::to_string(t.pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!pidfd || !proc) return none(t.pid, NoPython::gone, "no process " + std::to_string(t.pid));
  std::optional<TaskStat> stat;
  if (auto refused = check_identity(proc.get(), t, stat)) {
    return none(t.pid, refused->why, refused->detail);
  }
  auto kernel = read_kernel_threads(proc.get(), limits.max_kernel_threads);
  ProcessStacks p = read_python(proc.get(), t.pid, image_key(t.pid, *stat), limits);
  if (exited(pidfd.get())) {
    return none(t.pid, NoPython::gone,
                "pid " + std::to_string(t.pid) + " exited while it was read");
  }
  join_threads(p, std::move(kernel));
  p.cpu_ticks = stat->cpu_ticks;
  return p;
}

}  // namespace dp::stacks
