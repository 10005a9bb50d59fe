// The launchers' common start of a helper process (the rendezvous daemon,
// the node agent): two CLOEXEC pipes, so only the child's stdin and stdout
// reach it, then fork. What the child does before exec (its privileges, its
// signals) stays with each launcher.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "dp/result.hpp"
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"

namespace dp::spank {

struct PipedChild {
  pid_t pid = -1;
  UniqueFd input;   // the child's stdin, to write
  UniqueFd answer;  // the child's stdout, to read
};

// child(in_fd, out_fd, parent) runs in the forked child and must exec or
// _exit; parent is this process's pid, noted before the fork so the child
// can tell whether it was orphaned before its parent-death signal was set.
template <class Child>
Result<PipedChild> spawn_piped(Child&& child) {
  auto in = make_pipe(O_CLOEXEC);
  DP_TRY(in);
  auto out = make_pipe(O_CLOEXEC);
  DP_TRY(out);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return make_error(Errc::internal, std::string("fork: ") + dp::errno_text());
  if (pid == 0) {
    child(in->read.get(), out->write.get(), parent);
    _exit(127);  // never reached: the child execs or exits
  }
  return PipedChild{pid, std::move(in->write), std::move(out->read)};
}

}  // namespace dp::spank
