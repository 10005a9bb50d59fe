// dp-rendezvousd: the per-step rendezvous broker. Launch contract with the
// SPANK plugin's srun side: daemon_contract.hpp; logs on stderr.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "daemon_contract.hpp"
#include "dp/unique_fd.hpp"
#include "options.hpp"
#include "process_start.hpp"
#include "server.hpp"
#include "step_signals.hpp"

namespace {

// stdout carries exactly one line; afterwards fd 1 points at /dev/null so a
// stray write can never land on a client socket that reused the number.
void report_line(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  if (const dp::UniqueFd devnull(open("/dev/null", O_RDWR | O_CLOEXEC)); devnull)
    dup2(devnull.get(), STDOUT_FILENO);
}

int fail(const std::string& message) {
  std::fprintf(stderr, "dp-rendezvousd: %s\n", message.c_str());
  report_line(dp::daemon::format_answer(dp::make_error(dp::Errc::unavailable, message)));
  return 2;
}

// One line from stdin with plain read(): no stdio buffer keeps a copy.
std::string read_line() {
  std::string line;
  char c = 0;
  while (line.size() <= 1024) {
    const ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line.push_back(c);
  }
  return line;
}

// The last line of stdin (srun closes it after): read in blocks, up to max_bytes.
std::string read_last_line(size_t max_bytes) {
  std::string text;
  char buf[65536];
  while (text.size() < max_bytes) {
    const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text.substr(0, text.find('\n'));
}

void close_stdin() {
  if (const dp::UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC)); devnull)
    dup2(devnull.get(), STDIN_FILENO);
}

}  // namespace

int main(int argc, char** argv) {
  if (!dp::service::tie_to_parent(SIGTERM))
    return fail("the parent process is already gone; nothing to serve");
  // We end with srun (PDEATHSIG, the getppid check) or on SIGTERM from its
  // slurm_spank_exit; every other signal a user may send is not ours.
  dp::service::ignore_step_signals(SIGTERM);

  std::vector<std::string> args(argv + 1, argv + argc);
  auto opts = dp::daemon::parse_options(args);
  if (!opts) return fail(describe(opts.error()));
  if (opts->help) {
    std::fputs(dp::daemon::usage_text().c_str(), stdout);
    return 0;
  }
  auto secret = dp::daemon::validate_secret(read_line());
  if (!secret) {
    close_stdin();
    return fail(describe(secret.error()));
  }
  if (opts->listen_addr == "-") {
    // srun learns the address the ranks route to while the daemon starts.
    opts->listen_addr = read_line();
    if (opts->listen_addr.empty()) {
      close_stdin();
      return fail(
          "--listen -: no address on the second line of stdin (srun found no route to the master "
          "node?)");
    }
  }
  if (opts->step_nodes == "-") {
    // One address per node, space-separated: 16 384 nodes fit well under 1 MiB.
    opts->step_nodes = read_last_line(4u << 20);
  }
  close_stdin();

  auto server = dp::daemon::Server::create(*opts, std::move(*secret));
  if (!server) return fail(describe(server.error()));
  std::fprintf(stderr, "dp-rendezvousd: job %s step %s: world size %d, listening on %s port %u\n",
               opts->job_id.c_str(), opts->step_id.c_str(), opts->world_size,
               opts->listen_addr.c_str(), (*server)->port());
  report_line(dp::daemon::format_answer(
      dp::daemon::DaemonAnswer{(*server)->port(), (*server)->report_socket_name()}));
  (*server)->run();
  return 0;
}
