// The stacks rounds: dp-top --stacks, the hang watch's, and the straggler
// watch's "where do the others wait". At most one round is in flight; each
// node agent asked answers once; a round ends with its last answer or at its
// deadline, and its callers get the merged lines. Apart from it, the
// survivors each node agent reads at the step's failure, merged once per
// node. Pure: the broker sends the ask this returns, routes the answers here
// and acts on what a finished round says (step_watches.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "dp/stacks/flight_recorder.hpp"
#include "dp/stacks/merge.hpp"
#include "liveness.hpp"

namespace dp::daemon {

class StacksRounds {
 public:
  using Done = std::function<void(std::vector<std::string>)>;
  static constexpr std::chrono::milliseconds kWait{2'000};

  // Starts a round over `nodes` (each node agent's connection and what it
  // holds, "ranks 0-1 (n1)"), the NCCL ranks' flight recorders read too when
  // `flight`. Returns the push for each of them; nothing when a round runs.
  std::optional<proto::Response> start(Clock::time_point now, bool flight,
                                       std::map<ConnId, std::string> nodes);
  bool running() const { return round_.has_value(); }
  Clock::time_point deadline() const { return round_ ? round_->deadline : Clock::time_point{}; }
  // Into the running round: a caller for its lines; the hang and straggler
  // watch judge it.
  void add_caller(Done done);
  void for_watch();
  void drop() { round_.reset(); }
  // A node agent's answer (host: from its hello) to the running round;
  // stale and repeated answers are ignored. True when it was the last.
  bool answer(ConnId conn, const std::string& host, const proto::StacksAnswer& m);
  bool expired(Clock::time_point now) const { return round_ && now >= round_->deadline; }

  struct Finished {
    std::vector<stacks::RankStacks> got;
    std::vector<stacks::RankFlight> flights;  // every node's, NCCL or not
    bool complete = false;                    // every node asked answered
    bool for_watch = false;
    std::vector<Done> callers;
    std::vector<std::string> lines;  // for the callers: merged stacks, flights, who was read
  };
  // Ends the running round (there must be one).
  Finished finish();

  // A node agent's survivors at the failure: every node's so far, merged;
  // nothing for a node that already sent them.
  std::optional<std::vector<std::string>> at_failure(ConnId conn, const std::string& host,
                                                     const proto::StacksAnswer& m);

 private:
  struct Round {
    uint64_t ask = 0;
    Clock::time_point deadline;
    std::map<ConnId, std::string> waiting;  // node agents not yet answered: what they hold
    std::vector<stacks::RankStacks> got;
    std::vector<stacks::RankFlight> flights;
    std::vector<std::string> read_on;  // "n1 (ranks 0-1)" for each node that answered
    std::vector<Done> callers;
    bool for_watch = false;
  };
  std::optional<Round> round_;
  uint64_t next_ask_ = 1;
  std::vector<stacks::RankStacks> failure_got_;
  std::set<ConnId> failure_read_;
};

}  // namespace dp::daemon
