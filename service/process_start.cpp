#include "process_start.hpp"

#include <signal.h>
#include <sys/prctl.h>
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

}  // namespace dp::service
