// One strict integer parser, and one table of every DP_* variable and every
// timing a site may need to change (in the spirit of NCCL's NCCL_PARAM): one
// line each with its name, default, range and meaning. The runtime reads the
// integer ones through param(); the man page lists exactly these names
// (packaging test man_documents_variables).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "dp/env_names.hpp"
#include "dp/result.hpp"

namespace dp {

// Strict decimal integer in [min, max]: rejects empty text, '+', spaces,
// trailing garbage and overflow. The error message is only the reason ("not a
// whole number", "zero", "out of range", ...); callers add whose value it is.
Result<long long> parse_whole_number(std::string_view text, long long min, long long max);
// The same for values beyond long long (64-bit seeds).
Result<unsigned long long> parse_whole_number_u64(std::string_view text, unsigned long long min,
                                                  unsigned long long max);

// parse_whole_number with a message naming `what` and showing `example` as a
// fix: "what=text: reason; use a whole number from min to max, e.g. what=example".
Result<long long> parse_integer(std::string_view text, long long min, long long max,
                                std::string_view what, std::string_view example);

// parse_whole_number for an environment variable; the message names it:
// "NAME='text' is not an integer in [min, max] (reason); fix or unset the variable".
Result<long long> parse_env_integer(std::string_view name, std::string_view text, long long min,
                                    long long max);

// Integer variables: X(id, name, default, min, max, meaning). Durations carry
// their unit in the name.
#define DP_INTEGER_PARAMS(X)                                                                    \
  X(timeout_ms, env::kTimeoutMs, 300000, 1, 86400000,                                           \
    "a collective or rendezvous wait fails after this long (overrides InitOptions.timeout_ms)") \
  X(abort_grace_ms, "DP_ABORT_GRACE_MS", 3000, 0, 600000,                                       \
    "how long a failed Gloo collective waits for the daemon to name the cause")                 \
  X(reply_grace_ms, "DP_RDV_REPLY_GRACE_MS", 2000, 0, 600000,                                   \
    "extra wait for the daemon's reply beyond a request's own timeout")                         \
  X(rdv_silence_ms, "DP_RDV_SILENCE_MS", 6000, 0, 86400000,                                     \
    "the agent or daemon pings every second: nothing from it this long means it is gone; "      \
    "srun sets it from the site's heartbeat_timeout (a value of the user's wins)")              \
  X(shm_spin_us, "DP_SHM_SPIN_US", 20, 0, 1000000,                                              \
    "how long a shared-memory barrier spins before it sleeps")                                  \
  X(shm_slice_ms, "DP_SHM_SLICE_MS", 20, 1, 10000,                                              \
    "how often a shared-memory wait checks that its peers still live")                          \
  X(gloo_loop_nice, "DP_GLOO_LOOP_NICE", 19, 0, 19,                                             \
    "how many nice steps below the rank's own Gloo's network thread runs (it polls while a "    \
    "message waits for its receiver)")                                                          \
  X(nccl_ranks_per_root, "DP_NCCL_RANKS_PER_ROOT", 128, 1, 1048576,                             \
    "NCCL 2.23+: one bootstrap root (unique ID) per this many ranks (ncclCommInitRankScalable)")

// Every other DP_* variable: T(name, forms, meaning). The names the plugin
// and the runtime both use are spelled once, in env_names.hpp.
#define DP_TEXT_PARAMS(T)                                                                          \
  T(env::kBackend, "auto|gloo|nccl", "the communicator; auto: NCCL when a CUDA device is visible") \
  T(env::kShm, "auto|off", "auto: ranks on one host all-reduce through shared memory")             \
  T(env::kProgress, "on|off",                                                                      \
    "off: heartbeats carry no collective counters (no hang/straggler view)")                       \
  T(env::kDebug, "0|1", "1: print the effective settings and per-phase start-up timings")          \
  T(env::kStoreDir, "DIR", "without a daemon: a folder every rank sees, used as the store")        \
  T(env::kRdvAddr, "HOST:PORT", "set by the plugin: the step's dp-rendezvousd")                    \
  T(env::kRdvSecret, "HEX", "set by the plugin: the step's secret; never logged")                  \
  T(env::kAgentSocket, "@NAME", "set by the plugin: the node agent the ranks talk to")             \
  T(env::kAgentNetns, "net:[INODE]", "set by the plugin: the network namespace of that socket")    \
  T(env::kJobId, "ID", "set by the plugin: the job of the step")                                   \
  T(env::kStepId, "ID", "set by the plugin: the step whose tasks get the variables")               \
  T(env::kTiles, "LIST", "set by the plugin: this task's tiles, e.g. 0,1,2,3")                     \
  T(env::kMasterListenFd, "FD",                                                                    \
    "set by the plugin for rank 0 with --dp-master-socket=pass: MASTER_PORT's listening socket")   \
  T(env::kPorts, "PORT,...",                                                                       \
    "set by the plugin with --dp-ports=N: the step's N more ports on rank 0's node")               \
  T(env::kPortsListenFds, "FD,...",                                                                \
    "set by the plugin for rank 0 with --dp-ports and --dp-master-socket=pass: their sockets")     \
  T(env::kStore, "step",                                                                           \
    "set by the plugin with --dp-store=step: MASTER_ADDR:MASTER_PORT is the node agent's store")   \
  T(env::kRestartCount, "N",                                                                       \
    "set by the plugin with --dp-spares or --dp-max-restarts: restarts before this start")         \
  T(env::kOptions, "--dp-NAME=VALUE...",                                                           \
    "set by the plugin: the step's --dp-* options as srun resolved them")                          \
  T(env::kSkipStep, "JOB.STEP",                                                                    \
    "set by the plugin: srun explained or refused the step; each task ends before the program")

enum class Param {
#define DP_PARAM_ID(id, name, def, min, max, meaning) id,
  DP_INTEGER_PARAMS(DP_PARAM_ID)
#undef DP_PARAM_ID
};

struct ParamSpec {
  std::string_view name;
  std::string_view forms;   // integers: "MIN..MAX"
  long long def, min, max;  // integers only
  std::string_view meaning;
  bool integer;
};

// The whole table: the integer variables first, in Param order.
std::span<const ParamSpec> param_specs();
const ParamSpec& param_spec(Param p);

// `text` (the variable's value) checked against the table (parse_env_integer).
Result<long long> parse_param(Param p, std::string_view text);

// The effective value: the environment's when it is set and valid, else the
// default. Read once per process; check_params() reports a bad value.
long long param(Param p);

// The first integer variable whose value is bad, as an error.
Result<void> check_params();

// "NAME=value" for every integer variable (", default D" when it differs)
// and every text variable that is set, one per line; DP_RDV_SECRET is masked.
std::string describe_params();

}  // namespace dp
