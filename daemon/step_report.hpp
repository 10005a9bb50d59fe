// What the daemon learns about a step beyond brokering: each
// rank's start-up and progress (from hellos and heartbeats), the step's first
// failure, ranks that hang (alive, but not entering a collective the others
// wait in) and stragglers (ranks the others wait for). It answers the abort
// text, the hang verdict, and the step report (JSON for files and dp-top, one
// start-up line for srun --dp-verbose). Pure logic, no sockets.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "abort_cause.hpp"
#include "dp/duration_text.hpp"
#include "dp/proto/rendezvous.pb.h"
#include "dp/step_ports.hpp"
#include "startup_phases.hpp"
#include "straggler_report.hpp"

namespace dp::daemon {

// Insertion order kept: the report reads in the order it is written.
using Json = nlohmann::ordered_json;

// Ranks for a message: the first 8, then a count ("0,2,... (12 ranks)").
std::string rank_list(const std::vector<int>& ranks);
// The hang bound as a verdict names it: the option its setter can change,
// "--dp-hang-timeout=20s" (the user's) or "the site's hang_timeout=120 s".
std::string hang_bound_text(std::chrono::milliseconds bound, bool by_user);

// How a task ended, when a node agent knew it (RankLost); for a per-node
// launcher, how its first failed worker (torch RANK worker_rank) ended.
struct TaskExit {
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::optional<int> worker_rank;
  std::optional<int> user_signal;  // How::user_signal: the signal Slurm delivered
};

struct FailureRecord {
  int rank = -1;  // -1: not a rank (an agent)
  std::string host;
  AbortCause::How how = AbortCause::How::lost_connection;
  TaskExit exit;
  double at_s = 0;  // since the daemon started
  std::string message;
  // The survivors as their node agents read them before ending them (the
  // merged view, stacks/merge.hpp); empty: none read.
  std::vector<std::string> stacks;
};

// Counters of the daemon itself, for the report.
struct DaemonCounters {
  uint64_t connections = 0, connections_accepted = 0, requests = 0, heartbeats = 0, keys = 0,
           bytes_stored = 0, refused_unauthorized = 0, protocol_errors = 0, limit_errors = 0,
           nodes_connected = 0,     // node agents, each one of the connections
      store_strangers_refused = 0,  // other users' clients of the agents' PyTorch stores
      store_requests_refused = 0;   // requests of the step's own clients the agents refused
};

struct HangVerdict {
  int rank = -1;  // the first rank that does not arrive
  std::string message;
  std::string which;  // the same hang keeps it while its message's figures grow
};

class StepReport {
 public:
  using Clock = std::chrono::steady_clock;
  StepReport(Clock::time_point start, std::string job, std::string step, int world_size,
             std::chrono::milliseconds hang_timeout, bool hang_timeout_by_user = false);

  void on_hello(int rank, const std::string& host, Clock::time_point now);
  void on_agent_set(Clock::time_point now);  // the master node published its port
  // The step's ports on rank 0's node, as its agent published them.
  void on_step_ports(StepPorts ports) { ports_ = std::move(ports); }
  // "29400 (coordinator), DP_PORTS 29401,29402" or "-": dp-top's line.
  std::string ports_text() const;
  void on_progress(int rank, const proto::Progress& p, Clock::time_point now);
  void on_goodbye(int rank);
  // A PyTorch store wait for keys never set (blocking_calls.cpp), named by
  // its first missing key: false when that key is named already, or enough
  // are (the report and srun's output stay short).
  bool note_unset_wait(const std::string& key, std::string line);
  // Listed only once the step failed (a rank that gives up at its
  // rendezvous timeout fails it): a healthy step's timed waits for keys never
  // set were the program's own choice, not news.
  std::vector<std::string> unset_waits() const;
  // A PyTorch store request a node agent refused (its line names whose and
  // why): false once enough are kept.
  bool note_store_refusal(std::string line);
  const std::vector<std::string>& store_refusals() const { return store_refusals_; }

  // Records the step's first failure; returns the text every rank's error
  // and srun's last line carry. Later calls return the first text unchanged.
  std::string first_failure(int rank, const std::string& host, AbortCause::How how,
                            const std::string& what, Clock::time_point now,
                            const TaskExit& exit = {});
  const std::optional<FailureRecord>& failure() const { return failure_; }
  // Where the survivors were at the first failure (every node's read so far,
  // merged): the report's and dp-top's. Ignored before a failure.
  void note_failure_stacks(std::vector<std::string> view);
  // The step ended by the user's signal (scancel, srun's Ctrl-C), not a failure.
  bool ended_by_user() const { return failure_ && failure_->how == AbortCause::How::user_signal; }

  // The step restarts in place (--dp-spares, --dp-max-restarts): every rank
  // starts afresh (its progress, its goodbye, a hang suspected).
  void on_restart();
  // Every restart's line (spares.hpp's restart_line) and the spares left:
  // the report's "restarts", srun's and dp-top's.
  void note_restarts(std::vector<std::string> lines, int spares_left);
  const std::vector<std::string>& restarts() const { return restarts_; }
  int spares_left() const { return spares_left_; }
  // Since the last restart, from libdp's counters: whether any rank reports
  // them, every rank finished dp::init, every rank completed a collective.
  struct Resumed {
    bool reported = false, initialized = false, stepped = false;
  };
  Resumed resumed() const;

  // A hang that has lasted hang_timeout; call a few times a second.
  std::optional<HangVerdict> check_hang(Clock::time_point now);
  // Every rank reports its collectives (libdp): check_hang names the rank
  // the others wait for, more exactly than stacks can.
  bool counts_collectives() const;
  // A hang found (by check_hang or the stacks' watch): its line and, from
  // the stacks, the merged view. False when `which` hang was noted last.
  bool note_hang(const std::string& which, const std::string& message,
                 std::vector<std::string> view, Clock::time_point now);
  // "hang at 41.2 s: ..." and the view's lines: dp-top's; empty: none named.
  std::vector<std::string> hang_lines() const;

  // The straggler watch (issue 55), on when the step's threshold is set:
  // libdp's counters reach it through on_progress, the rest from the broker.
  void watch_stragglers(straggler::Settings s, long ticks_per_second);
  StragglerReport* stragglers() { return stragglers_ ? &*stragglers_ : nullptr; }
  const StragglerReport* stragglers() const { return stragglers_ ? &*stragglers_ : nullptr; }
  // The verdict's seconds: since the daemon started, as every figure of the report.
  double step_seconds(Clock::time_point t) const { return since_start_ms(t) / 1000.0; }

  std::string json(const StartupPhases& phases, const DaemonCounters& c,
                   Clock::time_point now) const;
  // "hello 2.1ms (rank 3 on n2), ..." for srun --dp-verbose.
  std::string startup_line(const StartupPhases& phases) const;
  // A few lines for the daemon's stats text.
  std::string text(Clock::time_point now) const;

 private:
  struct Rank {
    bool hello = false, goodbye = false, has_progress = false;
    std::string host;
    double hello_ms = 0;  // since the daemon started
    proto::Progress p;
    Clock::time_point p_at{};
  };
  struct Slowest {
    int rank = -1;
    double ms = 0;
  };
  double since_start_ms(Clock::time_point t) const;
  double wait_share(const Rank& r) const;
  std::vector<int> straggler_order() const;  // least waiting first
  std::string rank_name(int rank) const;
  std::string rank_state(int rank) const;  // not_connected, computing, in_collective, done, failed
  // Parts of json(): "startup" (phases and slowest ranks), one rank's
  // entry, the first failure (null before one).
  Json startup_json(const StartupPhases& phases) const;
  Json rank_json(int rank, Clock::time_point now) const;
  Json failure_json() const;
  Slowest slowest(double (*value)(const Rank&)) const;

  Clock::time_point start_;
  std::string job_, step_;
  int world_size_;
  std::chrono::milliseconds hang_timeout_;
  bool hang_timeout_by_user_;
  std::vector<Rank> ranks_;
  double agent_set_ms_ = -1;
  std::optional<StepPorts> ports_;
  std::set<std::string> unset_keys_;
  std::vector<std::string> unset_waits_;
  std::vector<std::string> store_refusals_;
  std::optional<FailureRecord> failure_;
  struct HangRecord {
    double at_s = 0;
    int count = 0;  // hangs named in the step (each after progress resumed)
    std::string which, message;
    std::vector<std::string> view;
  };
  std::optional<HangRecord> hang_;  // the latest hang named
  std::optional<StragglerReport> stragglers_;
  Json hang_json() const;
  uint64_t hang_op_ = 0;  // the collective a hang is suspected in (0: none)
  std::vector<std::string> restarts_;
  int spares_left_ = -1;  // -1: the step keeps no spares
  Clock::time_point hang_since_{};
};

}  // namespace dp::daemon
