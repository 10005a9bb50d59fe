// The limits of one step's daemon: what bounds its memory and its patience,
// each with its default and its dp-rendezvousd option (options.cpp). Below
// the broker: the store (kv_store.cpp) takes them without the broker.
#pragma once

#include <chrono>
#include <cstdint>

#include "dp/site_config.hpp"
#include "dp/store_limits.hpp"

namespace dp::daemon {

struct BrokerLimits {
  // At least PyTorch's own (dp/store_limits.hpp): the node agents serve its
  // programs' stores from here.
  uint32_t max_key_bytes{kStoreKeyBytes};
  uint32_t max_value_bytes{kStoreValueBytes};
  // One request's keys and values (a multi_set by its total): with the
  // envelope, the largest frame after hello. A larger one is refused under
  // its id and skipped; the connection stays.
  uint32_t max_request_bytes{kStoreRequestBytes};
  uint64_t max_total_bytes{128ull << 20};  // keys + values of the whole step
  std::chrono::milliseconds hello_timeout{5'000};
  // A rank silent this long while others are heard is dead. Longer than
  // Slurm's default gang-scheduling time slice (SchedulerTimeSlice=30 s), so
  // even a suspend or resume that reaches the nodes a slice apart is not taken
  // for a death; a dead process is found by its dropped connection at once,
  // so this only bounds how long an unreachable node goes unnoticed. 0: off.
  // Also the bound of a node's link: an outage shorter than this is survived.
  std::chrono::milliseconds heartbeat_timeout{
      std::chrono::seconds(site_defaults().heartbeat_timeout_s)};
  // Connections before hello beyond one per rank still to come; past that the
  // oldest is evicted.
  int max_unauthenticated{64};
  // No rank made progress this long (hang_watch.hpp's rule, from the node
  // agents' stacks), or others waited this long in a collective a live libdp
  // rank does not enter: the step hangs (0: off).
  std::chrono::milliseconds hang_timeout{std::chrono::seconds(site_defaults().hang_timeout_s)};
  // The user's --dp-hang-timeout set hang_timeout; else the site's hang_timeout.
  bool hang_timeout_by_user{false};
  // 1: a hang ends the step (the site's on_hang=end); 0: it is named only.
  int end_on_hang{0};
  // The straggler watch's threshold, a percentage of the time the others
  // wait for a rank (dp/straggler.hpp); 0: off.
  int straggler_pct{site_defaults().straggler_pct};
  int max_agents{256};  // authenticated non-rank peers (stepd agents, tools)
  // Blocking calls (get, wait, barrier) pending at once; 0: 4 per rank + 4096.
  // Anyone with the step's secret could otherwise grow the daemon without bound.
  int max_pending_calls{0};
  // Barriers entered but not yet complete (each holds a byte per rank).
  int max_open_barriers{1024};
  // Node agents the step expects (--nodes): connections and the
  // hello budget then follow nodes, not ranks. 0: ranks connect directly.
  int nodes{0};
  // end: a lost or silent node ends the step through slurmctld; keep: the
  // failure is only reported (on_failure=keep).
  OnFailure on_failure{OnFailure::end};
  // Restarts in place (--dp-spares, --dp-max-restarts; core's spares.hpp):
  // `spares` of the `nodes` node agents hold no ranks until a node is lost;
  // every node runs tasks_per_node ranks. Off while both are 0.
  int spares{0};
  int max_restarts{0};
  int tasks_per_node{0};
  // How long the node agents may take to stop their programs (the site's
  // kill_grace and a margin: srun passes it); one that has not by then is lost.
  std::chrono::milliseconds restart_stop{std::chrono::seconds(site_defaults().restart_stop_s())};
  // With spares: a node this silent is replaced (site key spare_timeout);
  // a lost node's programs count as dead once it was silent for `fence`
  // (site key fence_after: its agent killed them by then).
  std::chrono::milliseconds spare_silence{std::chrono::seconds(site_defaults().spare_timeout_s)};
  std::chrono::milliseconds fence{std::chrono::seconds(site_defaults().fence_after_s)};
  // 1: the node agents' task keepers restart the programs; 0: a per-node
  // launcher (torchrun) restarts its own workers, and only a lost node (a
  // spare's place) is the daemon's: a launcher that fails ends the step.
  int restart_programs{1};
  bool restarts() const noexcept { return (spares > 0 || max_restarts > 0) && tasks_per_node > 0; }
  // How long any rank may be silent: with spares, the shorter bound.
  std::chrono::milliseconds silence_limit() const noexcept {
    return spares > 0 && restart_programs && spare_silence.count() > 0 &&
                   (heartbeat_timeout.count() == 0 || spare_silence < heartbeat_timeout)
               ? spare_silence
               : heartbeat_timeout;
  }
};

}  // namespace dp::daemon
