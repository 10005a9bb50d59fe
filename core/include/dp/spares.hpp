// Restarting a step in place (--dp-spares, --dp-max-restarts): which node
// holds which node rank, which spare takes a lost node's place, whether the
// budget allows another restart, and the phases each restart is timed by.
// Pure: the daemon keeps a Roster and asks plan_restart; the task's keeper
// asks acting_place what its program is told. No Slurm, socket or clock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dp/layout.hpp"

namespace dp {

// How a step restarts (--dp-spares, --dp-max-restarts), decided once: srun's
// daemon launch, the layout plan and the tasks' keepers all ask here.
struct RestartShape {
  int spares = 0;          // the last K nodes wait as spares
  int tasks_per_node = 0;  // every node's, the same (a spare takes a whole place)
  int world_size = 0;      // (N - K) x T; under a launcher every launcher: N x T
  int max_restarts = 0;    // the budget; under a launcher, torchrun's spares
  bool keepers = false;    // each task keeps its program and starts it again; false:
                           // a per-node launcher (torchrun) restarts its own workers
};

struct RestartAsk {
  int tasks = 0;
  int nodes = 0;
  // The tasks of each node known here (srun: every node; slurmstepd: its
  // own); empty: only the total is known.
  std::vector<int> tasks_by_node;
  std::string launcher;  // the per-node launcher the step runs ("torchrun"); empty: none
};

// nullopt: the step does not restart (neither option asks for it; an explicit
// --dp-max-restarts=0 without spares is a plain step). An error names the
// option and the fix: a launcher with --dp-max-restarts, more spares than the
// site allows or than the step has nodes, nodes of unequal tasks.
Result<std::optional<RestartShape>> restart_shape(const Options& o, const SiteConfig& site,
                                                  const RestartAsk& ask);

// The step's nodes, by their index in Slurm's order (SLURM_NODEID): each
// holds a node rank (0..N-1), waits as a spare, or is lost for good.
struct Roster {
  static constexpr int kSpare = -1;
  static constexpr int kLost = -2;
  std::vector<int> node_rank;  // by node index
  int tasks_per_node = 0;
  int restarts = 0;      // done so far
  int max_restarts = 0;  // the step's budget (--dp-max-restarts, or the site's max_restarts)

  int nodes() const noexcept { return static_cast<int>(node_rank.size()); }
  int spares_left() const noexcept;
  int lost() const noexcept;
  // The node index that holds `rank` (a node rank), or -1.
  int node_holding(int rank) const noexcept;
};

// N + K nodes: the first N hold node ranks 0..N-1 in Slurm's order, the last
// K wait as spares (so without a loss every RANK is SLURM_PROCID, as ever).
Roster initial_roster(int nodes, int spares, int tasks_per_node, int max_restarts);

// What happened: a node is lost (its agent's link dropped, it fell silent,
// its tasks were killed with it), or a program failed on a live node.
enum class Setback : uint8_t { node_lost, program_failed };

struct RestartPlan {
  enum class Verdict : uint8_t {
    restart,  // stop every program, then start them again (a spare in the lost node's place)
    end,      // the step ends as a failure today does; `why` says what ran out
    none,     // nothing to restart: a spare (or an already lost node) was lost
  };
  Verdict verdict = Verdict::end;
  std::string why;     // end: what ran out, naming the option to change
  int spare = -1;      // restart after a loss: the spare node taking `node_rank`
  int node_rank = -1;  // the lost node's node rank (-1: a restart in place)
  Roster roster;       // the roster after it (restarts counted)
};

// `node`: the node index of the lost node, or of the live node whose program failed.
RestartPlan plan_restart(const Roster& r, Setback what, int node);

// A node on which the program failed at once (before the step's rendezvous
// of that start, or within kAtOnce of it) twice in a row, say a bad GPU, is
// retired while a spare is left: the failure counts as the node's loss, and
// the next spare takes its place instead of the budget being spent there.
// `early`: that node's failures at once so far, without a start that lasted
// between (updated); a failure after kAtOnce counts as any other.
inline constexpr int kFailuresToRetire = 2;
inline constexpr int64_t kAtOnceMs = 10'000;
Setback failure_setback(const Roster& r, int& early, bool at_once);

// Another node lost while a restart was under way, before the programs
// started again: it needs a spare too, but counts no second restart.
RestartPlan plan_further_loss(const Roster& r, int node);

// A per-node launcher's step (torchrun, --dp-spares=K): every node's
// launcher runs, and K of them wait in torchrun's own rendezvous (which
// gives each launcher its node rank); a lost node's place is torchrun's to
// fill. The roster holds every node (no spares of its own); the step goes on
// while at most K nodes are lost, each loss a restart of torchrun's.
RestartPlan plan_launcher_loss(const Roster& r, int node, int spares);

// The global ranks node rank `node_rank` holds: node_rank * T ... + T - 1.
std::vector<int> node_rank_ranks(int node_rank, int tasks_per_node);

// Where a task of a node acting as `node_rank` sits: RANK = node_rank * T +
// local, LOCAL_RANK = local, NODE_RANK = node_rank. A spare taking a lost
// node's place gets exactly that node's places, and its own tiles by LOCAL_RANK.
TaskPlace acting_place(int node_rank, int local_rank, int tasks_per_node);

// What a program of a step that restarts in place is told of its start:
// TORCHELASTIC_RESTART_COUNT (a program that resumes from its checkpoint reads
// it, as under torchrun) and DP_RESTART_COUNT.
EnvList restart_environment(int count);

// The phases of one restart, timed from the loss to the first step.
enum class RestartPhase : uint8_t { detect, stop, relaunch, rendezvous, first_step };
inline constexpr int kRestartPhases = 5;
const char* restart_phase_name(RestartPhase p) noexcept;

// One restart as the step report and srun's stderr tell it.
struct RestartRecord {
  int count = 0;             // 1 for the first
  std::string lost_host;     // empty: a restart in place
  std::string why;           // how the loss or failure showed (the verdict's text)
  std::string spare_host;    // who took the lost node's place; empty: in place
  int node_rank = -1;        // the node rank it took
  int tasks_per_node = 0;    // to name its ranks
  bool by_launcher = false;  // a launcher waiting in torchrun's rendezvous takes the place
  int spares_left = 0;
  int max_restarts = 0;
  // Milliseconds of each phase, in RestartPhase order; -1: not reached (or not
  // knowable: a program without libdp reports no step).
  int64_t phase_ms[kRestartPhases] = {-1, -1, -1, -1, -1};
};

// "restart 1 of 3: node n2 lost (...); spare n3 takes node rank 1 (ranks
// 2-3); detect 0.4 s, stop 0.3 s, relaunch 0.1 s, rendezvous 2.1 s, first step 1.2 s"
std::string restart_line(const RestartRecord& r);

}  // namespace dp
