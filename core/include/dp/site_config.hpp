// Site settings: key=value words from the plugstack.conf line, parsed
// strictly (unknown key or bad value is an error naming it). Pure.
//
// Every key is one line of the table in site_config.cpp: its default, the
// values it takes and its meaning. The parser, the list of keys and
// SiteConfig's defaults all come from that table, and the packaging tests
// check the plugstack snippet, the man page and ADMIN.md against it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/result.hpp"

namespace dp {

// --dp-ports' own bound, whatever a site allows (max_ports=).
inline constexpr int kMaxStepPorts = 64;

enum class AcceleratorKind { none, cuda, ze, rdu };
const char* accelerator_kind_name(AcceleratorKind k) noexcept;

// What a step's failure does to the tasks that survive it: one name from
// the site's on_failure= and the user's --dp-on-failure to the node agents
// and the daemon. end: every node ends its remaining tasks (a node that
// cannot be reached, through slurmctld); keep: they run on, the failure named.
enum class OnFailure : uint8_t { end, keep };
const char* on_failure_name(OnFailure f) noexcept;  // "end", "keep"
std::optional<OnFailure> on_failure_named(std::string_view word) noexcept;

struct SiteConfig {
  // Every field starts at its key's default from the table.
  SiteConfig();

  AcceleratorKind kind{};
  int devices_per_node{};      // 0: what Slurm tells (gres, visible devices)
  int tiles_per_device{};      // GPU stacks (ze), RDU tiles (rdu)
  int port_min{}, port_max{};  // MASTER_PORT range when Slurm reserved none
  // dp-rendezvousd's ports on srun's host (daemon_ports.hpp); 0: unset
  int daemon_port_min{}, daemon_port_max{};
  bool port_fallback_os{};  // the range all held: an OS-chosen port instead of failing
  bool default_on{};        // every step is a slurm-dp step
  std::string daemon_path;  // dp-rendezvousd; empty: the installed one
  std::string lease_dir;
  // Also the bound of every link's silence (daemon, node agents, ranks): an
  // outage shorter than this is survived. See dp-rendezvousd(8).
  int heartbeat_timeout_s{};
  int port_wait_s{};
  bool use_resv_ports{};
  int hang_timeout_s{};    // 0: off
  bool end_on_hang{};      // on_hang=end: a hang ends the step (--dp-on-hang wins)
  bool straggler_on{};     // straggler=name: the straggler watch (--dp-straggler wins)
  int straggler_pct{};     // straggler_threshold: the others' wait share that names a rank
  std::string report;      // %j job, %s step; empty: none
  int kill_grace_s{};      // SIGTERM to SIGKILL when the agents end a failed step's tasks
  OnFailure on_failure{};  // on_failure=: --dp-on-failure wins
  bool step_store{};       // store=step: the agents serve PyTorch's store (--dp-store wins)
  int max_ports{};         // the most --dp-ports a step may ask for
  int lease_share{};       // leased ports one user may hold on a node; 0: a quarter of the range

  // lease_share as it applies: the site's, or a quarter of the range (at least 1).
  int lease_share_ports() const noexcept {
    return lease_share > 0 ? lease_share : std::max(1, (port_max - port_min + 1) / 4);
  }
  int max_spares{};  // the most --dp-spares a step may ask for (0: none)
  // A step with spares: a node silent this long is replaced by a spare (a
  // spare waits: a restart costs seconds, waiting costs every rank); an
  // agent that heard nothing of the daemon for fence_after kills its node's
  // programs, so a replaced node never runs on beside its spare.
  int spare_timeout_s{};
  int fence_after_s{};
  // How long the node agents may take to stop their programs in a restart
  // (kill_grace and a margin for the keepers' word): one that has not is lost.
  int restart_stop_s() const noexcept { return kill_grace_s + 5; }
  int max_restarts{};     // a step's restart budget with --dp-spares and no --dp-max-restarts
  bool spares_no_kill{};  // spares_no_kill=set: srun defaults --no-kill for --dp-spares

  // Words the parser accepted but the site should change (a key that was
  // removed), one message each; the plugin shows them on slurm-dp steps.
  std::vector<std::string> warnings;

  // Tiles per node the site declares; 0 when it leaves it to Slurm.
  int declared_tiles_per_node() const noexcept { return devices_per_node * tiles_per_device; }
};

// Parses the plugin's argv (argc words after the plugin path). Messages name
// the key and say the fix.
Result<SiteConfig> parse_site_config(const std::vector<std::string>& words);

// One key of the table, as the documentation shows it.
struct SiteKey {
  std::string key;
  std::string def;     // as written on the plugin line; empty: unset
  std::string values;  // what it takes: "cuda|ze|rdu|none", "0..4096", "/PATH", "LOW-HIGH"
  std::string meaning;
};

// The table's defaults, parsed once: other parts take a site default from
// here, never as a literal of their own.
const SiteConfig& site_defaults();

// Every key parse_site_config accepts, and no other, in the table's order.
const std::vector<SiteKey>& site_keys();

// Keys of earlier releases that a plugin line may still name: accepted with
// a warning, so an upgrade never stops every srun for a word that did nothing.
const std::vector<std::string>& removed_site_keys();

}  // namespace dp
