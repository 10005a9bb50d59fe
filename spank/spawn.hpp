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

#include "dp/result.hpp"
#include "pipe_pair.hpp"

namespace dp::spank {

struct PipedChild {
  pid_t pid = -1;
  int input_fd = -1;   // the child's stdin, to write
  int answer_fd = -1;  // the child's stdout, to read
};

// child(in_fd, out_fd, parent) runs in the forked child and must exec or
// _exit; parent is this process's pid, noted before the fork so the child
// can tell whether it was orphaned before its parent-death signal was set.
template <class Child>
Result<PipedChild> spawn_piped(Child&& child) {
  Pipe in, out;
  if (pipe2(in.fd, O_CLOEXEC) != 0 || pipe2(out.fd, O_CLOEXEC) != 0)
    return make_error(Errc::internal, std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return make_error(Errc::internal, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    child(in.fd[0], out.fd[1], parent);
    _exit(127);  // never reached: the child execs or exits
  }
  close(in.release(0));
  close(out.release(1));
  return PipedChild{pid, in.release(1), out.release(0)};
}

}  // namespace dp::spank
