// What the rendezvous benches share: the real dp-rendezvousd started the
// way srun starts it (daemon_contract.hpp), its CPU and peak memory, and the
// simulated nodes' and ranks' source addresses.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace dp::bench {

// The step's secret in every bench run (a bench has no one to hide it from).
extern const std::string kSecret;

int64_t now_ns();  // CLOCK_MONOTONIC

struct Daemon {
  pid_t pid = -1;
  uint16_t port = 0;
};
// nodes > 0: the step's ranks come through node agents (--nodes). Exits the
// bench with a message when the daemon does not start.
Daemon start_daemon(const std::string& path, int world, int nodes, int64_t heartbeat_ms);

long vm_hwm_kib(pid_t pid);
// CPU seconds (user + system) the process used so far: a figure that, unlike
// wall time, does not depend on how busy the rest of the machine is.
double cpu_seconds(pid_t pid);

// The source address of peer `index` (host order), in 127.1.0.0/16.
uint32_t source_address(int index, bool node);
// The simulated nodes' addresses, as srun gives the daemon the step's nodes
// (their connections without hello have a budget of their own).
std::vector<std::string> bench_nodes(int nodes);
// A non-blocking TCP connect to 127.0.0.1:port from peer index's own source
// address; the descriptor, or -1.
int connect_from(int index, bool node, uint16_t port);

// Runs body(k) for k in [0, workers) in forked processes, at once, and
// collects what each returns (plain data) through a pipe: nothing from a
// worker that died first. Simulated peers on many nodes run side by side,
// and each process has its own descriptor limit. The workers, and so their
// connections, live on until after_results() has run (a daemon stopped
// there never sees its peers leave). while_running() runs in the parent once
// every worker is started, before their results are read.
template <class T, class Body, class While, class After>
std::vector<std::optional<T>> run_in_workers(int workers, Body body, While while_running,
                                             After after_results) {
  static_assert(std::is_trivially_copyable_v<T>);
  int hold[2];
  if (pipe(hold) != 0) std::exit(1);
  std::vector<std::pair<pid_t, int>> kids;
  for (int k = 0; k < workers; ++k) {
    int p[2];
    pid_t pid = -1;
    if (pipe(p) != 0 || (pid = fork()) < 0) {
      std::perror("bench: cannot start a worker process");
      std::exit(1);
    }
    if (pid == 0) {
      close(p[0]);
      close(hold[1]);
      const T r = body(k);
      const bool sent = write(p[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
      char c;
      [[maybe_unused]] ssize_t n = read(hold[0], &c, 1);  // until the parent lets go
      _exit(sent ? 0 : 1);
    }
    close(p[1]);
    kids.emplace_back(pid, p[0]);
  }
  close(hold[0]);
  while_running();
  std::vector<std::optional<T>> out;
  for (auto [pid, fd] : kids) {
    T r{};
    const bool got = read(fd, &r, sizeof r) == static_cast<ssize_t>(sizeof r);
    close(fd);
    out.push_back(got ? std::optional<T>(r) : std::nullopt);
  }
  after_results();
  close(hold[1]);
  for (auto [pid, fd] : kids) waitpid(pid, nullptr, 0);
  return out;
}

}  // namespace dp::bench
