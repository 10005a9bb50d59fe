#include "step_signals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dp/step_signals.hpp"
#include "dp/sys_error.hpp"

namespace dp::service {
namespace {

// The pipe's write end, set before any handler is installed; the pipe lives
// as long as the process (its owner is the service's, made once in main).
int g_signal_fd = -1;

void record(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  // A full pipe drops it: the loop has not read the ones before yet.
  [[maybe_unused]] const ssize_t n = ::write(g_signal_fd, &b, 1);
  errno = saved;
}

}  // namespace

void ignore_step_signals(int keep) noexcept {
  for (int s = 1; s < NSIG; ++s)
    if (s != keep && is_step_signal(s)) signal(s, SIG_IGN);
}

Result<StepSignalPipe> StepSignalPipe::install() {
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
    return make_error(Errc::internal, std::string("pipe2: ") + dp::errno_text());
  StepSignalPipe p;
  p.read_.reset(fds[0]);
  p.write_.reset(fds[1]);
  g_signal_fd = fds[1];
  struct sigaction sa {};
  sa.sa_handler = record;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int s = 1; s < NSIG; ++s) {
    // A peer's close is an error value, not a signal to record.
    if (s == SIGPIPE) signal(s, SIG_IGN);
    else if (is_step_signal(s) && sigaction(s, &sa, nullptr) != 0)
      return make_error(Errc::internal, "sigaction(" + signal_name(s) + "): " + dp::errno_text());
  }
  return p;
}

std::vector<int> StepSignalPipe::drain() {
  std::vector<int> got;
  unsigned char buf[64];
  for (;;) {
    const ssize_t n = ::read(read_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.insert(got.end(), buf, buf + n);
  }
  return got;
}

}  // namespace dp::service
