// The step's ports' hold on the master node: the sockets slurmstepd (root)
// binds to MASTER_PORT (leased, or the first Slurm reserved) and to the
// step's --dp-ports at set-up, so no other process can bind one until rank
// 0 starts its program. Said below of MASTER_PORT, true of each.
//
//  - slurmstepd keeps it while the tasks fork, so every task's process
//    inherits a copy (close-on-exec);
//  - after the fork (task_post_fork) slurmstepd's own copy goes. With
//    SlurmdParameters=contain_spank, Slurm runs that callback in a clone that
//    shares slurmstepd's memory but not its descriptor table, where a close
//    would not reach slurmstepd's copy: a thread of slurmstepd's, started
//    with the hold, closes it when asked from either;
//  - each task but rank 0 drops its copy first thing in task_init; rank 0's
//    goes at its exec (close-on-exec, so also through the task prologs),
//    after its check, or is handed over listening (--dp-master-socket=pass,
//    master_socket.hpp).
// So the port is free only from rank 0's exec until its program binds it.
// The tasks run their task_init at once, so a task that comes late to its
// own would still hold a copy when rank 0's program binds the port ("address
// already in use"): every copy of the hold also holds the write end of a
// pipe, the fence, whose end rank 0 waits for before its exec.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <vector>

#include "dp/result.hpp"
#include "dp/unique_fd.hpp"

namespace dp::spank {

// One port of the step and the socket bound to it (empty: known but not
// held, a Slurm-reserved port that TIME_WAIT kept from every binder).
struct HeldPort {
  int port = 0;
  UniqueFd socket;
};

class StepPortHold {
 public:
  StepPortHold() = default;
  StepPortHold(const StepPortHold&) = delete;
  StepPortHold& operator=(const StepPortHold&) = delete;
  ~StepPortHold() { stop(); }

  // slurmstepd: keeps the step's ports' sockets and starts the closer.
  Result<void> keep(std::vector<HeldPort> ports);
  // This process's copy of `port`'s socket (-1: none, or dropped).
  int fd(int port) const noexcept;

  // slurmstepd, or a contain_spank clone of it: slurmstepd's own copy goes
  // (a bounded wait for the closer). Idempotent.
  void let_go_in_stepd() noexcept;
  // A task's process (forked from slurmstepd): its inherited copy goes.
  void drop_task_copy() noexcept;
  // Rank 0's process, before its exec: waits at most timeout_ms until no
  // other process holds a copy of the hold (the fence's end: every other
  // task dropped its copy or ended, slurmstepd let go). False: one still
  // does. True at once where this process inherited no fence.
  bool await_other_copies(int timeout_ms) noexcept;
  // slurmstepd at the step's end: lets go and ends the closer. Idempotent.
  void stop() noexcept;

 private:
  static void* closer_main(void* self) noexcept;
  // This process's copies: the ports' sockets and the fence.
  void close_copy() noexcept;

  std::vector<HeldPort> held_;
  UniqueFd fence_read_, fence_write_;  // a pipe: its end, when every write end is closed
  UniqueFd wake_, done_;               // eventfds: "close it now", "closed"
  pthread_t closer_{};
  pid_t owner_ = 0;  // the process whose thread the closer is (slurmstepd)
  std::atomic<bool> let_go_{false};
};

// A hold made shareable with the job's user (PortHold::to_listen,
// step_ports.hpp): SO_REUSEPORT on and the socket owned by `uid`. The kernel
// then lets a socket of that uid with SO_REUSEPORT bind the port beside it
// (the program's gRPC server) and keeps every other uid's out, with or
// without the option; it stays bound, never listening, so it takes none of
// the program's connections. The node agent keeps a copy past rank 0's exec.
Result<void> share_hold_with_user(int fd, uid_t uid);

// Rank 0's check in task_init, on the master node: `held` (the copy its
// process inherited; -1 where there is none: --dp-master-port) still keeps
// `port` to the step. A hold taken over a port in TIME_WAIT needed
// SO_REUSEADDR, which a kernel may let another binder with it share: a
// listener of anyone's on the port (the kernel's tables, bounded) fails the
// step, naming its uid.
Result<void> check_step_port_before_exec(int held, int port);

}  // namespace dp::spank
