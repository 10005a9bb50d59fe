// The user's --dp-* options, parsed strictly. Pure: no Slurm types.
//
// Every field is optional so job-level values (sbatch/salloc) can be
// overlaid by step-level ones (srun wins) field by field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/params.hpp"  // parse_integer
#include "dp/result.hpp"
#include "dp/site_config.hpp"  // kMaxStepPorts

namespace dp {

// --dp-launcher: whether each task is a per-node launcher (torchrun and its
// kin) that forks its own workers.
enum class Launcher {
  auto_detect,  // recognised from the task's command (torchrun, python -m torch.distributed.run)
  torchrun,     // the user says so (a wrapper script slurm-dp cannot read)
  none,         // never: one task per node is a plain rank, no PET_* variables
};

// --dp-master-socket: what becomes of the step's held ports on rank 0's node
// when rank 0 starts its program.
enum class MasterSocket {
  close,  // the hold ends at exec; the program binds the port
  pass,   // rank 0 gets each port bound and listening (DP_MASTER_LISTEN_FD, DP_PORTS_LISTEN_FDS)
  share,  // held on, as the job's user with SO_REUSEPORT, until the program listens on it
};

struct Options {
  std::optional<int> world;             // 0: auto (the step's task count)
  std::optional<int> tiles;             // accelerator tiles per task
  std::optional<int> master_port;       // 0: auto
  std::optional<bool> explain;          // print the layout, start nothing
  std::optional<bool> verbose;          // plan and daemon messages on stderr
  std::optional<std::string> report;    // step report file (JSON), written by srun at step end
  std::optional<Launcher> launcher;     // per-node launcher tasks (default: auto_detect)
  std::optional<OnFailure> on_failure;  // --dp-on-failure; unset: the site's on_failure
  // --dp-master-socket: what becomes of the step's held ports at rank 0's
  // exec (step_ports.hpp, port_hold). Unset: each port's default.
  std::optional<MasterSocket> master_socket;
  // --dp-store=step (true): the node agents serve PyTorch's store to the
  // tasks; rank0 (false): rank 0's program hosts it. Unset: the site's store=.
  std::optional<bool> step_store;
  // --dp-ports=N: the step's port count, N ports on rank 0's node besides
  // MASTER_PORT (DP_PORTS; StepPorts::ports, step_ports.hpp).
  std::optional<int> dp_port_count;
  // --dp-hang-timeout: seconds without progress before the step is named as
  // hanging (0: off); unset: the site's hang_timeout.
  std::optional<int> hang_timeout_s;
  // --dp-on-hang=end (true) or name; unset: the site's on_hang.
  std::optional<bool> end_on_hang;
  // --dp-straggler=name (true) or off; unset: the site's straggler.
  std::optional<bool> straggler;
  // --dp-spares=K: K of the step's nodes wait as spares; one takes a lost
  // node's place and the step restarts in place (spares.hpp).
  std::optional<int> spares;
  // --dp-max-restarts=R: restarts the step may make (a loss or a failed
  // program); unset: the site's max_restarts with --dp-spares, else none.
  std::optional<int> max_restarts;

  // Any option is set (a row of the table in options.cpp).
  bool any() const;
  bool passes_master_socket() const noexcept { return master_socket == MasterSocket::pass; }
  bool uses_step_store(bool site_step_store) const noexcept {
    return step_store.value_or(site_step_store);
  }
  // The step's restart budget: --dp-max-restarts, else with --dp-spares the
  // site's max_restarts, else 0 (a failure ends the step, as ever).
  int restart_budget(int site_max_restarts) const noexcept {
    if (max_restarts) return *max_restarts;
    return spares.value_or(0) > 0 ? site_max_restarts : 0;
  }
  // The step's programs may be started again: each task is a keeper (spares.hpp).
  bool restarts_programs() const noexcept {
    return spares.value_or(0) > 0 || max_restarts.value_or(0) > 0;
  }
};

// "auto", "torchrun", "none": the option's own words.
const char* launcher_name(Launcher l) noexcept;

struct OptionSpec {
  const char* name;     // without the leading "--", as registered with Slurm
  const char* arginfo;  // nullptr: a flag without value
  const char* usage;
};
// Every option slurm-dp registers, in --help order.
const std::vector<OptionSpec>& option_specs();

// Applies one option. `value` is nullptr for flags. Idempotent: Slurm may
// call an option callback twice with the same value. Error messages name
// the option and say the fix (no "slurm-dp:" prefix; the caller adds it).
Result<void> apply_option(Options& opts, std::string_view name, const char* value);

// Fields set in `top` replace those of `base`.
Options overlay(const Options& base, const Options& top);

// The step's options as srun resolves them: the job's (sbatch/salloc), then
// srun's own, which win; nullopt for a step that asked for no --dp-* option
// on a site without default=on (slurm-dp leaves it alone).
std::optional<Options> resolve_options(const Options& job, const Options& srun,
                                       bool site_default_on);

// The one value that carries srun's resolved options to the nodes and the
// tasks (DP_OPTIONS): the options they use, spelt as on the command line,
// e.g. "--dp-world=auto --dp-tiles=2 --dp-master-port=29500". srun's own
// options (--dp-explain, --dp-verbose, --dp-report) stay in srun.
std::string format_node_options(const Options& opts);
// Reads it back through apply_option, so every value is bounded by the one
// table; `what` names the value's source in a message.
Result<Options> parse_node_options(std::string_view text, std::string_view what);

}  // namespace dp
