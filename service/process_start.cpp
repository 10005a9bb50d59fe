#include "process_start.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace dp::service {

bool tie_to_parent(int death_signal) noexcept {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_UNBLOCK, &all, nullptr);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_PDEATHSIG, death_signal);
  // Checked after PDEATHSIG is set: a parent that died before is seen here.
  return getppid() != 1;
}

unsigned long long raise_fd_limit() noexcept {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) return want.rlim_cur;
  }
  return rl.rlim_cur;
}

}  // namespace dp::service
