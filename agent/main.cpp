// dp-nodeagent: the node agent of one step, started by the
// plugin in slurmstepd as the job's user. Launch contract
// (launch_contract.hpp): settings on stdin up to an empty line, then task
// exits; one answer line on stdout; stdin's EOF ends the step here.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "agent_server.hpp"
#include "daemon_hello.hpp"
#include "dp/hex.hpp"
#include "dp/random_bytes.hpp"
#include "dp/sys_error.hpp"
#include "dp/unix_socket.hpp"
#include "launch_contract.hpp"
#include "port_holds.hpp"
#include "process_start.hpp"
#include "step_signals.hpp"
#include "tcp_connect.hpp"
#include "unix_connect.hpp"

namespace {

using dp::agent::Clock;

int fail(const std::string& message) {
  std::fprintf(stderr, "dp-nodeagent: %s\n", message.c_str());
  const std::string line = dp::agent::format_answer(dp::make_error(dp::Errc::unavailable, message));
  [[maybe_unused]] const ssize_t n = write(STDOUT_FILENO, line.data(), line.size());
  return 2;
}

// slurmstepd writes the settings as soon as it has started the agent.
constexpr std::chrono::seconds kSettingsWait{10};
// The least time to reach the daemon: srun started it before the step, and
// the site's port_wait (which may be 0) is for slurmstepd's own start.
constexpr std::chrono::seconds kLeastDaemonWait{10};

// Up to the empty line, byte by byte: what follows is the control stream.
dp::Result<std::string> read_settings() {
  std::string text;
  const auto deadline = Clock::now() + kSettingsWait;
  char c = 0;
  while (text.size() < dp::agent::kMaxSettingsBytes) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, dp::rdv::ms_until(deadline)) == 0)
      return dp::make_error(dp::Errc::timeout, "no settings from slurmstepd");
    const ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return dp::make_error(dp::Errc::connection, "settings cut short");
    text.push_back(c);
    if (text.size() >= 2 && text.compare(text.size() - 2, 2, "\n\n") == 0) return text;
  }
  return dp::make_error(dp::Errc::protocol, "settings too long");
}

dp::Result<dp::service::UniqueFd> listen_abstract(const std::string& name) {
  auto addr = dp::unix_address(name);
  DP_TRY(addr);
  dp::service::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd || bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr->sa), addr->len) != 0 ||
      listen(fd.get(), 4096) != 0)
    return dp::sys_error(dp::Errc::connection, "cannot listen on " + name);
  return fd;
}

// An abstract name nobody can guess (so another user cannot take it first).
dp::Result<std::pair<dp::service::UniqueFd, std::string>> listen_local(
    const dp::agent::AgentSettings& s) {
  const auto raw = dp::random_bytes(16);
  DP_TRY(raw);
  const std::string name =
      "@slurm-dp-" + std::to_string(s.job) + "." + std::to_string(s.step) + "-" +
      dp::to_hex({reinterpret_cast<const unsigned char*>(raw->data()), raw->size()});
  auto fd = listen_abstract(name);
  DP_TRY(fd);
  return std::pair(std::move(*fd), name);
}

// The step's PyTorch store (--dp-store=step): loopback only, so no other host
// can reach it, on a port the kernel picks and this process holds for the
// whole step, so nothing can squat it between a choice and a bind. Every
// local user can connect: the server checks each peer's owner (admit_store).
dp::Result<dp::service::UniqueFd> listen_store() {
  dp::service::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (!fd || bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      listen(fd.get(), 4096) != 0) {
    return dp::sys_error(dp::Errc::connection,
                         "cannot listen on 127.0.0.1 for the step's PyTorch store");
  }
  return fd;
}

// The daemon is READY before srun starts the step; retries cover a busy host
// and a stranger flooding the daemon's port, until the port wait runs out.
dp::Result<dp::agent::DaemonLink> reach_daemon(const dp::agent::AgentSettings& s) {
  const dp::agent::NodeHello h{s.addr, s.secret, s.host, s.world_size, s.ranks, s.node};
  dp::agent::HelloRetry retry;
  retry.deadline = Clock::now() + std::max<Clock::duration>(s.port_wait, kLeastDaemonWait);
  return dp::agent::hello_daemon(h, retry);
}

}  // namespace

int main() {
  // Slurm signals every process of the step (scancel, --signal, srun's
  // Ctrl-C, pre-emption, the time limit): those are for the tasks, which may
  // checkpoint and say goodbye through us. We only record them (the launcher
  // ignored them through exec). We leave when the control pipe closes (the
  // step's end), the daemon goes, or on SIGKILL; leaving earlier loses the
  // node's goodbyes and makes the user's signal a node_lost.
  auto signals = dp::service::StepSignalPipe::install();
  if (!signals) return fail(signals.error().message);
  // The plugin set PDEATHSIG after dropping to the job's user; again here in
  // case another launcher started us. Never outlive slurmstepd (SIGKILL: the
  // ignored SIGTERM would not do).
  if (!dp::service::tie_to_parent(SIGKILL))
    return fail("the parent process is already gone; nothing to serve");
  // One local connection per rank of the node, and slurmstepd's soft limit is
  // often 1 024 (systemd's default for services).
  dp::service::raise_fd_limit();
  auto text = read_settings();
  if (!text) return fail(text.error().message);
  auto settings = dp::agent::parse_settings(*text);
  std::fill(text->begin(), text->end(), '\0');
  if (!settings) return fail(settings.error().message);
  // The held ports' sockets came at descriptors 3, 4, ... (launch_contract.hpp).
  std::vector<std::string> notes;
  auto holds = dp::agent::PortHolds::adopt(settings->held_ports, 3, notes);
  for (const auto& note : notes) std::fprintf(stderr, "dp-nodeagent: %s\n", note.c_str());
  auto local = listen_local(*settings);
  if (!local) return fail(local.error().message);
  dp::service::UniqueFd store;
  if (settings->serve_store) {
    auto s = listen_store();
    if (!s) return fail(s.error().message);
    store = std::move(*s);
  }
  // The task keepers of a step that restarts in place, beside the ranks' socket.
  dp::service::UniqueFd keepers;
  if (settings->keepers) {
    auto k = listen_abstract(local->second + dp::agent::kKeeperSuffix);
    if (!k) return fail(k.error().message);
    keepers = std::move(*k);
  }
  auto daemon = reach_daemon(*settings);
  if (!daemon)
    return fail("cannot reach the step's daemon at " + settings->addr + ": " +
                daemon.error().message);
  // The NCCL ranks' flight-recorder folder and RAS port: without them only
  // NCCL hangs go unnamed.
  notes.clear();
  auto flight = dp::agent::FlightPlaces::create(settings->job, settings->step, notes);
  for (const auto& note : notes) std::fprintf(stderr, "dp-nodeagent: %s\n", note.c_str());
  auto server = dp::agent::AgentServer::create(
      *settings, std::move(*daemon), std::move(local->first), std::move(local->second),
      std::move(*signals), std::move(store), std::move(holds), std::move(flight),
      std::move(keepers));
  if (!server) return fail(server.error().message);
  return (*server)->run();
}
