// Test helpers: start N ranks of comm_worker (and a real dp-rendezvousd) as
// child processes, wait for them with deadlines, and kill only those PIDs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dp::test {

struct Child {
  pid_t pid = -1;
  std::string log;            // stdout+stderr file
  std::optional<int> status;  // exit status once reaped (wait status)
};

// Starts `argv` with the current environment plus `env` (overrides), output to `log`.
Child spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& log);

// Reaps every child or fails at the deadline (and then kills the rest by PID).
// Returns false if the deadline passed.
bool wait_all(std::vector<Child>& kids, std::chrono::steady_clock::time_point deadline);

// Polls `path` until it contains `text` or the deadline passes.
bool wait_for_text(const std::string& path, const std::string& text,
                   std::chrono::steady_clock::time_point deadline);

std::string read_file(const std::string& path);

// Fresh directory under $TMPDIR, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A running dp-rendezvousd for one step; stopped (by PID) by the destructor.
// `start` runs $DP_TEST_RENDEZVOUSD where set, else the built binary given.
class Daemon {
 public:
  static std::optional<Daemon> start(const std::string& built, int world_size,
                                     const std::string& secret, std::string* error);
  Daemon(Daemon&& o) noexcept : pid_(o.pid_), port_(o.port_) { o.pid_ = -1; }
  Daemon& operator=(Daemon&& o) noexcept {
    std::swap(pid_, o.pid_);
    std::swap(port_, o.port_);
    return *this;
  }
  ~Daemon();
  int port() const { return port_; }

 private:
  Daemon(pid_t pid, int port) : pid_(pid), port_(port) {}
  pid_t pid_;
  int port_;
};

}  // namespace dp::test
