// A step that may restart in place (--dp-spares, --dp-max-restarts): its
// state and the decisions that need nothing but that state and the step's
// peers, each a pure function with its own unit tests. Core's RestartMachine
// holds the phases (STOP, FENCE, START); the broker carries out what they
// say (restart_runner.cpp) and asks this part what to push and whom a loss
// names.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "abort_cause.hpp"
#include "dp/proto/rendezvous.pb.h"
#include "dp/restart_machine.hpp"
#include "dp/spares.hpp"
#include "restart_times.hpp"
#include "step_peers.hpp"
#include "torchrun_launchers.hpp"

namespace dp::daemon {

// A push to a node agent: a Response with id 0 carrying `r`.
proto::Response restart_push(const proto::Restart& r);

struct StepRestart {
  // The phases (restart_machine.hpp): STOP, FENCE and START, and the
  // lines saying each change.
  RestartMachine machine{std::chrono::milliseconds(0)};
  Roster roster;
  RestartRecord record;            // the restart under way, until its line is out (times.is_open)
  RestartTimes times{1};           // sized to the world at the broker's start
  std::vector<std::string> lines;  // every restart's line, for the report and srun
  bool done_pushed = false;        // every rank is done: DONE went to the agents
  // A launcher step's ranks that will never say goodbye: a lost node's, or
  // a waiting launcher's that ended once the step's work was done.
  std::set<int> gone;
  bool lost_ended = false;  // slurmctld was asked to end the lost nodes' tasks
  // By node index, each node's failures at once (times.at_once) in a row
  // (failure_setback).
  std::map<int, int> early;
  TorchrunLaunchers launchers;  // a launcher step's: which node each runs on

  // START for the node holding node rank `nr`: its ranks, this generation.
  proto::Restart start_push(int nr) const;
  // What a node agent that connected again while the programs stop or start
  // is pushed again (it answers a repeat without doing it twice); none when
  // its node is not waited for.
  std::optional<proto::Restart> repeat_for(int node) const;
  // DONE: every rank of the step is done, the tasks (spares too) may end.
  proto::Restart done_push() const;
  // The node indexes whose agents are ready and hold a place in the roster.
  std::set<int> live_nodes(const StepPeers& peers) const;
  // A node that holds a node rank but has no agent now (its drop unheard):
  // its loss, as if heard; none when every such node has one. nodes_left:
  // the nodes whose agents said goodbye (their programs ended with them).
  std::optional<AbortCause> unheard_node_loss(const StepPeers& peers, const Liveness& live,
                                              const std::set<int>& nodes_left,
                                              Clock::time_point now) const;
  // A node agent that held no ranks left: a spare (one spare fewer), or a
  // spare given a lost node's place that had not started it yet (its loss
  // then needs another spare, or ends the step). None: no loss.
  std::optional<AbortCause> spare_loss(const Peer& p) const;
  // Once every rank is done: what ends the lost nodes' tasks in Slurm,
  // which srun would otherwise wait for.
  AbortCause lost_nodes_done() const;
};

}  // namespace dp::daemon
