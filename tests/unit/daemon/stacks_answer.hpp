// Stacks answers for the daemon's tests, as a node agent sends them.
#pragma once

#include "dp/proto/rendezvous.pb.h"

namespace dp::daemon::test {

// One rank's part of a stacks answer: pid and its one thread's tid 100+rank,
// the thread in kernel state `state` and system call `syscall` (-1: none).
inline proto::RankStacks* add_rank_thread(proto::StacksAnswer& a, int rank, char state = 'S',
                                          int syscall = -1) {
  auto* m = a.add_ranks();
  m->set_rank(rank);
  m->set_pid(100 + rank);
  auto* t = m->add_threads();
  t->set_tid(100 + rank);
  t->mutable_kernel()->set_state(state);
  t->mutable_kernel()->set_syscall(syscall);
  return m;
}

}  // namespace dp::daemon::test
