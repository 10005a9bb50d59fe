// slurmstepd (S_CTX_REMOTE): on every node of a slurm-dp step, settle
// MASTER_PORT (once per node, as root, before tasks fork) and give each
// task its ranks and accelerator mask (in the task, just before exec).
//
// Root here never acts on what the user's environment says: a step is a
// slurm-dp step because Slurm carried --dp-* values (or the site set
// default=on), and everything that talks to the step's daemon, whose
// address the user's srun chose, runs in the node agent (dp-nodeagent, as
// the job's user; agent_launcher.hpp). Root reads back one validated line.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "agent_launcher.hpp"
#include "contexts.hpp"
#include "dp/env_names.hpp"
#include "dp/layout.hpp"
#include "dp/master_port.hpp"
#include "dp/options.hpp"
#include "master_socket.hpp"
#include "plugin_state.hpp"
#include "port_lease.hpp"
#include "skipped_step.hpp"
#include "unix_connect.hpp"  // dp_sockets
#include "user_child.hpp"

namespace dp::spank {

namespace {

std::optional<std::string> job_env(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return std::nullopt;
  return std::string(buf);
}

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME")) return sanitize(n, 128);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

struct StepIds {
  uint32_t job = 0, step = 0;
  std::string text() const { return std::to_string(job) + "." + std::to_string(step); }
};

// What the node agent needs, read by root before the fork.
struct AgentStart {
  agent::AgentSettings settings;
  std::chrono::milliseconds wait{60'000};
  UserIds ids;
};

Result<std::vector<int32_t>> local_ranks(spank_t sp) {
  uint32_t count = 0;
  if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &count) != ESPANK_SUCCESS || count == 0)
    return make_error(Errc::internal, "cannot read this node's task count from slurmstepd");
  std::vector<int32_t> ranks;
  for (uint32_t local = 0; local < count; ++local) {
    uint32_t global = 0;
    if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, local, &global) != ESPANK_SUCCESS)
      return make_error(Errc::internal, "cannot read the global rank of local task " +
                                            std::to_string(local) + " from slurmstepd");
    ranks.push_back(static_cast<int32_t>(global));
  }
  return ranks;
}

// This node's part of the step, as the layout core takes it: its tasks,
// the step's task count and the devices Slurm gave the step here (before it
// narrows them per task).
Result<StepFacts> node_facts(spank_t sp, const SiteConfig& site) {
  StepFacts f;
  uint32_t total = 0;
  if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &total) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot read the step's task count from slurmstepd");
  auto ranks = local_ranks(sp);
  DP_TRY(ranks);
  f.shape.hosts = {node_name()};
  f.shape.task_ids = {std::vector<int>(ranks->begin(), ranks->end())};
  f.task_count = static_cast<int>(total);
  uint32_t nodes = 0;
  if (spank_get_item(sp, S_JOB_NNODES, &nodes) == ESPANK_SUCCESS)
    f.node_count = static_cast<int>(nodes);
  f.command = task_command(sp);
  f.nodes = {NodeDevices{std::nullopt, VisibleDevices{job_env(sp, env::kCudaVisibleDevices),
                                                      job_env(sp, env::kZeAffinityMask)}}};
  f.site = site;
  return f;
}

Result<AgentStart> agent_start(spank_t sp, const PluginState& st, const StepIds& id) {
  AgentStart a;
  agent::AgentSettings& s = a.settings;
  auto addr = job_env(sp, env::kRdvAddr);
  auto secret = job_env(sp, env::kRdvSecret);
  if (!addr || !secret)
    return make_error(Errc::internal,
                      "the step has no rendezvous address (DP_RDV_ADDR); srun did not "
                      "prepare it: is spank_dp.so in srun's plugstack.conf too?");
  if (spank_get_item(sp, S_JOB_UID, &a.ids.uid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_GID, &a.ids.gid) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot read the job's uid/gid from slurmstepd");
  s.addr = *addr;
  s.secret = *secret;
  s.host = node_name();
  s.job = id.job;
  s.step = id.step;
  s.world_size = st.facts.task_count;
  const auto& mine = st.facts.shape.task_ids.front();
  s.ranks.assign(mine.begin(), mine.end());
  s.port_wait = std::chrono::seconds(st.site.port_wait_s);
  s.kill_grace = std::chrono::seconds(st.site.kill_grace_s);
  s.heartbeat_timeout = std::chrono::seconds(st.site.heartbeat_timeout_s);
  s.keep_survivors = st.facts.options.keeps_survivors(st.site.keep_survivors);
  // A launcher step (one task per node, torchrun recognised or marked): the
  // agent watches its workers. A refused shape never gets this far.
  auto shape =
      launch_shape(st.facts.options, st.facts.command, st.facts.node_count, st.facts.task_count);
  s.watch_workers = shape && !shape->launcher.empty();
  // The agent's own timeouts end it first; this bounds one that hangs.
  a.wait = s.port_wait + std::chrono::seconds(5);
  return a;
}

Result<int> take_lease(spank_t sp, PluginState& st, const StepIds& id) {
  LeaseRequest req;
  req.seed = random_seed();
  req.tag = id.text();
  if (spank_get_item(sp, S_JOB_UID, &req.owner) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot read the job's uid from slurmstepd");
  // No user may hold more than a quarter of the range (at least 4).
  req.max_per_user = std::max(4, (st.site.port_max - st.site.port_min + 1) / 4);
  auto lease = lease_master_port(st.site, req);
  DP_TRY(lease);
  st.leased_port = lease->port();
  st.lease = std::move(*lease);
  return st.leased_port;
}

// MASTER_PORT known on this node without the master node: --dp-master-port
// or Slurm's reservation.
Result<std::optional<int>> local_master_port(spank_t sp, const PluginState& st) {
  if (st.facts.options.master_port.value_or(0) > 0)
    return std::optional<int>(*st.facts.options.master_port);
  auto resv = st.site.use_resv_ports ? job_env(sp, "SLURM_STEP_RESV_PORTS") : std::nullopt;
  if (!resv) return std::optional<int>();
  auto first = first_reserved_port(*resv);
  DP_TRY(first);
  if (!first->has_value()) return std::optional<int>();
  return std::optional<int>(static_cast<int>(**first));
}

// Starts the node agent, which also carries MASTER_PORT from the master
// node (a leased port, or its failure, published write-once) to the others.
// Returns MASTER_PORT; the agent's socket is exported to the tasks.
Result<std::string> start_node_agent(spank_t sp, PluginState& st, const StepIds& id) {
  auto start = agent_start(sp, st, id);
  DP_TRY(start);
  auto fixed = local_master_port(sp, st);
  DP_TRY(fixed);
  uint32_t local_of_rank0 = 0, nnodes = 1;
  const bool master =
      spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, uint32_t{0}, &local_of_rank0) == ESPANK_SUCCESS;
  spank_get_item(sp, S_JOB_NNODES, &nnodes);
  Result<int> lease = 0;
  agent::AgentSettings& s = start->settings;
  if (fixed->has_value()) {
    s.master = agent::MasterPort::none;
  } else if (master) {
    lease = take_lease(sp, st, id);
    // A failure is published on one node too: the agent makes it the step's first failure.
    s.master = nnodes > 1 || !lease ? agent::MasterPort::publish : agent::MasterPort::none;
    if (lease) s.published = *lease;
    else s.published = MasterFailure{node_name(), lease.error().message};
  } else {
    s.master = agent::MasterPort::fetch;
  }
  auto answer =
      start_agent(agent_path_beside(daemon_path(st.site)), start->ids, s, start->wait, st.agent);
  DP_TRY(lease);
  // The master node's own failure, as the agent learnt it (published, or
  // carried by the daemon's abort when this node's hello came too late).
  if (answer && answer->master_failure)
    return make_error(Errc::aborted, master_failure_text(*answer->master_failure));
  if (!answer) {
    if (s.master != agent::MasterPort::fetch)
      return make_error(answer.error().code, "node agent: " + answer.error().message);
    return make_error(answer.error().code,
                      "MASTER_PORT: no answer from the master node through the node agent "
                      "(waiting at most port_wait=" +
                          std::to_string(st.site.port_wait_s) + " s): " + answer.error().message);
  }
  if (spank_setenv(sp, env::kAgentSocket, answer->socket.c_str(), 1) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot set DP_AGENT_SOCKET for the tasks");
  // The agent's abstract socket lives in this network namespace (the agent
  // is our child): a task in another one is told why it cannot reach it.
  const std::string netns = rdv::network_namespace();
  if (!netns.empty()) spank_setenv(sp, env::kAgentNetns, netns.c_str(), 1);
  if (fixed->has_value()) return std::to_string(**fixed);
  if (master) return std::to_string(*lease);
  if (answer->port < 1) return make_error(Errc::protocol, "the node agent gave no MASTER_PORT");
  return std::to_string(answer->port);
}

// The exit status of every task of a step srun explained or refused
// (skipped_step.hpp). srun refuses every heterogeneous step, and only the
// first component's nodes get the variables srun sets.
std::optional<int> skipped_status(spank_t sp, const StepIds& id) {
  if (auto value = job_env(sp, env::kSkipStep))
    if (auto status = skipped_step_status(*value, id.job, id.step)) return status;
  if (job_env(sp, "SLURM_HET_SIZE"))
    return srun_error_status(job_env(sp, "SLURM_EXIT_ERROR").value_or("").c_str());
  return std::nullopt;
}

bool is_special_step(uint32_t step_id) {
  return step_id == SLURM_BATCH_SCRIPT || step_id == SLURM_EXTERN_CONT ||
         step_id == SLURM_INTERACTIVE_STEP || step_id == SLURM_PENDING_STEP;
}

// The step's set-up on this node; an error fails every task of the node.
Result<void> set_up_node(spank_t sp, PluginState& st, const StepIds& id) {
  if (st.option_error)
    return make_error(Errc::invalid_argument, "srun passed an invalid --dp-* value to the node");
  // srun writes its step's ids and options; others (an enclosing step's, or
  // the user's own) mean srun did not prepare this step. Only checked and
  // read, never a reason to act.
  const auto options = job_env(sp, env::kOptions);
  if (job_env(sp, env::kJobId) != std::to_string(id.job) ||
      job_env(sp, env::kStepId) != std::to_string(id.step) || !options)
    return make_error(Errc::internal,
                      "srun did not prepare this step for slurm-dp (DP_JOB_ID/DP_STEP_ID "
                      "name another step, or no DP_OPTIONS): is spank_dp.so in srun's "
                      "plugstack.conf too?");
  auto facts = node_facts(sp, st.site);
  DP_TRY(facts);
  auto opts = parse_node_options(*options, env::kOptions);
  DP_TRY(opts);
  st.facts = std::move(*facts);
  st.facts.options = *opts;
  const VisibleDevices& given = *st.facts.nodes.front().given;
  slurm_debug("slurm-dp: step %s node devices cuda=%s ze=%s options %s", id.text().c_str(),
              given.cuda ? sanitize(*given.cuda).c_str() : "-",
              given.ze ? sanitize(*given.ze).c_str() : "-", sanitize(*options).c_str());
  auto port = start_node_agent(sp, st, id);
  DP_TRY(port);
  if (spank_setenv(sp, env::kMasterPort, port->c_str(), 1) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot set MASTER_PORT for the tasks");
  st.master_port = *port;
  st.master_addr = job_env(sp, env::kMasterAddr).value_or("");  // srun's, for the tasks
  return {};
}

// The task's variables from the one layout entry: this node's facts, with
// how Slurm binds devices to tasks (SLURMD_TRES_BIND, which slurmstepd sets
// from the step's request just before this callback) and what it set in the
// task.
Result<EnvList> task_variables(spank_t sp, const PluginState& st, const TaskPlace& place) {
  StepFacts f = st.facts;
  f.request = parse_device_request("", "", "", job_env(sp, "SLURMD_TRES_BIND").value_or(""));
  auto plan = plan_layout(f);
  DP_TRY(plan);
  const VisibleDevices task_visible{job_env(sp, env::kCudaVisibleDevices),
                                    job_env(sp, env::kZeAffinityMask)};
  auto tiles = task_tiles(*plan, st.site, 0, task_visible);
  DP_TRY(tiles);
  auto env = task_environment(*plan, st.site, place, *tiles);
  DP_TRY(env);
  // srun set MASTER_ADDR, set_up_node MASTER_PORT: a per-node launcher's copies.
  for (auto& v :
       launcher_master_environment(plan->launch, job_env(sp, env::kMasterAddr).value_or(""),
                                   job_env(sp, env::kMasterPort).value_or("")))
    env->push_back(std::move(v));
  return env;
}

bool passes_master_socket(const PluginState& st) {
  return st.facts.options.pass_master_socket.value_or(false);
}

// --dp-master-socket=pass, in rank 0's task: MASTER_PORT's socket, listening,
// as DP_MASTER_LISTEN_FD.
Result<void> pass_master_socket(spank_t sp, const PluginState& st) {
  auto fd = master_listen_socket(st.lease.hold_fd(), std::atoi(st.master_port.c_str()));
  if (!fd) return fd.error();
  if (spank_setenv(sp, env::kMasterListenFd, std::to_string(*fd).c_str(), 1) != ESPANK_SUCCESS)
    return make_error(Errc::internal, std::string("cannot set ") + env::kMasterListenFd);
  return {};
}

}  // namespace

int stepd_init_post_opt(spank_t sp) {
  PluginState& st = state();
  StepIds id;
  if (spank_get_item(sp, S_JOB_ID, &id.job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &id.step) != ESPANK_SUCCESS || is_special_step(id.step))
    return 0;
  // Options Slurm carried (or the site's default) make a slurm-dp step;
  // the user's DP_* variables never do.
  if (!st.cli_options.any() && !st.site.default_on && !st.option_error) return 0;
  st.active = true;
  report_site_warnings(st.site);
  // srun explained or refused the step and told its user why: nothing to
  // set up, every task ends before the program.
  st.skip_status = skipped_status(sp, id);
  if (st.skip_status) return 0;
  auto ok = set_up_node(sp, st, id);
  if (!ok) {
    // Returned from here, Slurm would only log "Plugin initialization
    // failed" and srun would exit 0; failing every task in task_init makes
    // srun say why and exit non-zero.
    st.setup_error = "step " + id.text() + " on node " + node_name() + ": " + ok.error().message;
    slurm_error("slurm-dp: %s", st.setup_error.c_str());
  }
  return 0;
}

int stepd_user_init(spank_t) {
  // The leased port stays bound by us until now, just before the tasks are
  // forked; rank 0 re-checks it before exec. Passed to rank 0, it stays
  // bound until rank 0 is forked with it (task_post_fork).
  if (!passes_master_socket(state())) state().lease.drop_hold();
  return 0;
}

int stepd_task_init(spank_t sp) {
  PluginState& st = state();
  if (!st.active) return 0;
  // In the task's own process, before the program: Slurm ends a task whose
  // plugin stack fails the same way, but with an error line of its own.
  if (st.skip_status) std::_Exit(*st.skip_status);
  uint32_t rank = 0, local_count = 0, node_id = 0;
  int local_rank = 0;
  if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_ID, &local_rank) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_count) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS) {
    report_error("cannot read this task's place from slurmstepd");
    return -1;
  }
  if (!st.setup_error.empty()) {
    report_error(st.setup_error);  // the task's stderr: srun shows it
    return -1;
  }
  // The leased port was ours until the tasks were forked; a process that
  // took it since would answer rank 0's peers in its place.
  if (rank == 0 && passes_master_socket(st)) {
    if (auto passed = pass_master_socket(sp, st); !passed) {
      report_error(passed.error().message + " (node " + node_name() + ")");
      return -1;
    }
  } else if (rank == 0 && st.leased_port > 0 && !port_binds(st.leased_port)) {
    report_error(
        "MASTER_PORT " + std::to_string(st.leased_port) + " on node " + node_name() +
        " was taken by another process after slurm-dp leased it; start the step again, and "
        "ask the site for Slurm-reserved ports (MpiParams=ports=, srun --resv-ports)");
    return -1;
  }
  TaskPlace place{static_cast<int>(rank), local_rank, static_cast<int>(local_count),
                  static_cast<int>(node_id)};
  auto vars = task_variables(sp, st, place);
  if (!vars) {
    report_error(vars.error().message + " (node " + node_name() + ")");
    return -1;
  }
  // A plugin earlier in task_init may have set these too: pyxis imports a
  // container image's environment with overwrite, and NGC images carry
  // enroot's MASTER_ADDR/MASTER_PORT. Ours load after it (the snippet's
  // name collates after pyxis.conf), so the step's own values win.
  if (!st.master_addr.empty()) vars->emplace_back(env::kMasterAddr, st.master_addr);
  vars->emplace_back(env::kMasterPort, st.master_port);
  for (const auto& [name, value] : *vars)
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
      report_error("cannot set " + name + " for task " + std::to_string(rank));
      return -1;
    }
  return 0;
}

// The task is forked and cannot have been reaped yet (slurmstepd reaps it
// after this callback returns): its pid and start time name it exactly.
int stepd_task_post_fork(spank_t sp) {
  PluginState& st = state();
  st.lease.drop_hold();  // passed to rank 0 (forked by now), or dropped already
  if (!st.active || !st.agent.running()) return 0;
  pid_t pid = 0;
  uint32_t rank = 0;
  if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS || pid <= 1)
    return 0;
  if (auto start = agent::read_start_ticks(pid))
    tell_task_start(st.agent, agent::TaskStart{static_cast<int>(rank), pid, *start});
  return 0;
}

int stepd_task_exit(spank_t sp) {
  PluginState& st = state();
  if (!st.active || !st.agent.running()) return 0;
  uint32_t rank = 0, local_count = 0;
  int status = 0;
  if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS)
    return 0;
  // The agent reports the rank's loss with how it ended (first failure).
  tell_task_exit(st.agent, static_cast<int>(rank), status);
  // After the node's last task, slurmstepd SIGKILLs its process tree (the
  // agent too) at once: hand the step's end to the agent now, so that it
  // reads every exit and says the node's goodbye before it can be killed.
  // stop_agent's wait is bounded.
  if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_count) == ESPANK_SUCCESS &&
      ++st.tasks_ended >= local_count)
    stop_agent(st.agent);
  return 0;
}

int stepd_exit(spank_t) {
  stop_agent(state().agent);
  state().lease.release();
  return 0;
}

}  // namespace dp::spank
