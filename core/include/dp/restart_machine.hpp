// The phases of a step's restart in place (--dp-spares, --dp-max-restarts),
// as one machine: events in, commands out. Pure: nodes are Slurm node
// indices, links the daemon's opaque handles, time is given; the daemon
// carries the commands out (STOP, FENCE, START to the node agents) and
// decides what a loss means (spares.hpp). Every phase change goes through
// one function and leaves one line, and so does every event that changed
// anything ("restart event +MICROSECONDS: ..."): the daemon prints them
// (srun --dp-verbose), and a recorded log replays (replay_restart_log)
// into the same lines.
//
//   running -> stopping (STOP to every live node agent)
//           -> fencing  (every live node stopped; a lost node's programs may still run)
//           -> starting (START: every lost node's programs are known dead)
//           -> running  (every node agent started its programs)
//
// A loss while stopping, fencing or starting begins a new generation, so
// late answers to the old one count for nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dp/result.hpp"

namespace dp {

class RestartMachine {
 public:
  using Time = std::chrono::steady_clock::time_point;
  enum class Phase : uint8_t { running, stopping, fencing, starting };
  static const char* phase_name(Phase p) noexcept;

  struct Command {
    enum class Kind : uint8_t {
      stop,        // STOP(generation) to `node`'s agent
      fence,       // FENCE(generation) to `node`'s agent, on `link`
      close_link,  // a fenced node's programs are dead: its link goes
      start,       // every program stopped: clear the programs' state, START
                   // every live node, then report them with starting()
      lose,        // `node`'s agent neither stopped nor started in time: lost (`why`)
      running,     // every node agent started its programs
    };
    Kind kind;
    int node = -1;
    uint64_t generation = 0;
    uint64_t link = 0;
    std::string why;
    bool operator==(const Command&) const = default;
  };
  using Commands = std::vector<Command>;

  // A lost node whose programs may still run: dead once its agent answers
  // FENCE, `dead_by` passes, or (its link closed) a keeper's reaction later.
  struct Fence {
    uint64_t link = 0;  // 0: closed (or never open)
    std::string host, how;
    Time dead_by{};
  };

  // bound: how long a node agent may take to stop or start its programs.
  explicit RestartMachine(std::chrono::milliseconds bound) : bound_(bound) {}

  // A lost node whose place is another's: FENCE (for the coming generation)
  // on its link, when it has one; no START until its programs are dead.
  Commands fence(int node, Fence f, Time now);
  // A new generation: STOP to every live node agent (none: straight on to
  // the start).
  Commands begin(const std::set<int>& live_nodes, Time now, const std::string& why);
  // A node agent's answer to the phase's order of `generation`.
  Commands stopped(int node, uint64_t generation, Time now);
  Commands started(int node, uint64_t generation, Time now);
  // The daemon sent START to these nodes (after Command::start).
  Commands starting(const std::set<int>& nodes, Time now);
  // A node agent waited for left (its goodbye, its link's drop): not waited for.
  Commands left(int node, Time now);
  // A fenced node's agent said its programs are dead; its link closed.
  Commands fence_answered(int node, Time now);
  Commands fence_link_closed(int node, Time now, std::chrono::milliseconds reaction);
  // Deadlines: fences that passed, a phase's bound.
  Commands tick(Time now);

  Phase phase() const noexcept { return phase_; }
  uint64_t generation() const noexcept { return generation_; }
  bool stopped_phase() const noexcept {
    return phase_ == Phase::stopping || phase_ == Phase::fencing;
  }
  const std::set<int>& waiting() const noexcept { return waiting_; }
  int fenced_node(uint64_t link) const noexcept;
  // Every line so far, and what happened since the last take (the daemon prints them).
  const std::vector<std::string>& lines() const noexcept { return lines_; }
  std::vector<std::string> take_lines();

 private:
  void to(Phase next, const std::string& why);
  void event(Time now, const std::string& what);
  int64_t since_origin(Time t);  // microseconds; the first call sets the origin
  Commands settle(Time now);
  Commands try_start();
  Commands answered(Phase of, const char* what, int node, uint64_t generation, Time now);
  Commands phase_done();
  Commands answer(int node);

  std::chrono::milliseconds bound_;
  Phase phase_ = Phase::running;
  uint64_t generation_ = 0;
  std::set<int> waiting_;  // node agents whose answer to the phase is due
  Time deadline_{};
  std::map<int, Fence> fences_;
  std::vector<std::string> lines_;
  size_t taken_ = 0;
  std::optional<Time> origin_;  // the first event's time: the log's +0
};

// A log of "restart event" and result lines (the daemon's, any prefix up to
// "restart " or a host's "'s programs are dead" cut off) fed again to a fresh
// machine: the lines it makes, for comparison with the log's own. An error
// names the line that cannot be read.
struct ReplayedLog {
  std::vector<std::string> recorded, replayed;
};
Result<ReplayedLog> replay_restart_log(const std::vector<std::string>& log);

}  // namespace dp
