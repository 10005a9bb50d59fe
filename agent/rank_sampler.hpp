// The straggler watch on a node (issue 55): once the daemon asks
// (SampleAsk), a thread of its own looks at every rank's main thread every
// `every` ms (stacks/straggler_samples.hpp: two short /proc reads a rank)
// and keeps each rank's counts; each heartbeat carries them. A rank that
// sleeps has its frames read too, every kFramesEvery (issue 68:
// stacks::wait_kind, its main thread only, no kernel view, calls named only
// in the program's own files), so that a wait on its own input is told from
// a wait in a collective; looks between two reads in the same syscall take
// the last such read's word while it is fresh (a rank alternates: a sleep,
// its loader's poll, a collective's futex), and a read counts only where
// the rank slept through it (stacks::slept_through). Off the loop, as the stacks reader is: a /proc
// read that waits on a rank never holds the node's heartbeats, and a frames read that blocks is
// left behind (stacks::read_processes).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "dp/stacks/straggler_samples.hpp"
#include "dp/unique_fd.hpp"
#include "launch_contract.hpp"

namespace dp::agent {

class RankSampler {
 public:
  // A syscall's word is renewed only by a read that finds the rank asleep in
  // it: a rank that alternates between its loader's poll and a collective's
  // futex went without a word (the kernel's: a poll is "other") in 9-16 % of
  // its sleeping looks when words lasted 2.5 s, under 1 % at 10 s.
  static constexpr std::chrono::milliseconds kFramesEvery{1000}, kFramesFresh{10000};

  RankSampler() = default;
  ~RankSampler();  // stops and joins the thread
  RankSampler(const RankSampler&) = delete;
  RankSampler& operator=(const RankSampler&) = delete;

  // Starts looking every `every` (a later call changes the period). Without
  // a thread (the user's process limit) nothing is counted: the daemon then
  // has no evidence from this node, never a wrong one.
  void start(std::chrono::milliseconds every);
  // The node's ranks now (its tasks, or a launcher's workers).
  void set_ranks(const std::vector<TaskStart>& ranks);
  // Each rank's counts so far, for the heartbeat; empty until started.
  std::vector<proto::RankSamples> counts() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Watched {
    int rank = 0;
    unsigned long long start_ticks = 0;
    std::optional<stacks::LookFiles> files;  // bound to this process, never to a reused pid
    stacks::LookCounts counts;
    // What its frames said, by the syscall its main thread slept in then.
    std::map<int, std::pair<stacks::WaitKind, Clock::time_point>> said;
  };
  void run();
  void look(std::map<int, Watched>& watched, const std::vector<TaskStart>& ranks);
  void read_frames(std::map<int, Watched>& watched,
                   const std::map<int, stacks::ProcessLook>& looks);

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::chrono::milliseconds every_{0};
  std::vector<TaskStart> ranks_;               // guarded by mu_
  std::vector<proto::RankSamples> published_;  // guarded by mu_
  Clock::time_point frames_at_{};              // the last frames read; the thread's own
  std::thread thread_;
};

}  // namespace dp::agent
