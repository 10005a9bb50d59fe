// slurmstepd (S_CTX_REMOTE): on every node of a slurm-dp step, settle
// MASTER_PORT (once per node, as root, before tasks fork) and give each
// task its ranks and accelerator mask (in the task, just before exec).
//
// Root here never acts on what the user's environment says: a step is a
// slurm-dp step because Slurm carried --dp-* values (or the site set
// default=on), the step's facts are read once (stepd_facts.hpp; the job's
// environment is the user's word, job_environment.hpp), the ports are taken
// and held in stepd_ports.hpp, and everything that talks to the step's
// daemon, whose address the user's srun chose, runs in the node agent
// (dp-nodeagent, as the job's user; agent_launcher.hpp). Root reads back one
// validated line.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent_launcher.hpp"
#include "contexts.hpp"
#include "dp/env_names.hpp"
#include "dp/layout.hpp"
#include "dp/master_port.hpp"
#include "dp/nccl_watch.hpp"
#include "dp/options.hpp"
#include "dp/shown_value.hpp"
#include "dp/spares.hpp"
#include "dp/step_ports.hpp"
#include "dp/step_store.hpp"
#include "job_environment.hpp"
#include "keeper_contract.hpp"
#include "plugin_state.hpp"
#include "stepd_facts.hpp"
#include "stepd_ports.hpp"
#include "task_keeper.hpp"
#include "unix_connect.hpp"  // dp_sockets

namespace dp::spank {

namespace {

// What slurmstepd holds for its step between Slurm's callbacks. Whether a
// step is a slurm-dp step is decided from the options Slurm carries to
// slurmstepd (the shared cli_options, filled by the remote option
// callbacks) or the site's default=on, never from DP_* variables, which the
// user may set to anything. Their values come from the one value srun
// resolved (DP_OPTIONS), in layout.options.
struct StepdState {
  const SiteConfig& site = state().site;  // the plugin line's (slurm_spank_init)
  bool active = false;                    // this step is a slurm-dp step
  StepdFacts facts;                       // read once (stepd_facts.hpp)
  StepFacts layout;                       // this node's part of the step, for the layout core
  int dp_port_count = 0;                  // the plan's checked --dp-ports
  std::string setup_error;                // set-up failed: every task fails with it
  std::optional<int> skip_status;         // srun explained or refused the step: each task exits so
  bool explain_masks = false;  // an explained step where Slurm names devices otherwise than srun
  std::string master_addr;     // set again in each task, after earlier plugins
  int master_port = 0;         // likewise
  StoreKind store = StoreKind::rank0;  // --dp-store=step: MASTER_* name the agent's store
  NcclWatchPlaces nccl_watch;          // the agent's flight-recorder folder and RAS port
  StepdPorts ports;                    // the step's ports, and on the master node their hold
  NodeAgent agent;                     // this node's dp-nodeagent; stopped at step end
  std::string agent_socket;            // its abstract socket's name (a keeper's is beside it)
  uint32_t tasks_ended = 0;            // task exits told to the agent
};

StepdState& stepd() {
  static StepdState s;
  return s;
}

// What the node agent needs, read by root before the fork.
struct AgentStart {
  agent::AgentSettings settings;
  std::chrono::milliseconds wait{};  // the site's port_wait and a margin (agent_start)
};

// This node's part of the step, as the layout core takes it: its tasks,
// the step's task count and the devices Slurm gave the step here (before it
// narrows them per task).
StepFacts node_facts(const StepdFacts& f, const SiteConfig& site) {
  StepFacts n;
  n.shape.hosts = {f.node};
  n.shape.task_ids = {std::vector<int>(f.local_ranks.begin(), f.local_ranks.end())};
  n.task_count = static_cast<int>(f.tasks);
  n.node_count = static_cast<int>(f.nodes);
  n.command = f.command;
  n.devices_confined = f.devices_confined;
  n.nodes = {NodeDevices{std::nullopt, VisibleDevices{f.env.cuda_visible, f.env.ze_mask}}};
  n.site = site;
  return n;
}

AgentStart agent_start(const StepdState& st, const LayoutPlan& plan) {
  AgentStart a;
  agent::AgentSettings& s = a.settings;
  const StepdFacts& f = st.facts;
  s.addr = f.env.rdv_addr.value_or("");
  s.secret = f.env.rdv_secret.value_or("");
  s.host = f.node;
  s.job = f.id.job;
  s.step = f.id.step;
  s.world_size = plan.world_size;
  s.ranks = f.local_ranks;
  s.node = f.node_index;
  // A step that restarts in place: each task keeps its program; a spare node
  // holds no ranks until it takes a lost node's place (spares.hpp).
  if (plan.restarts) {
    s.task_ids = s.ranks;
    s.ranks.clear();
    if (s.node >= 0 && s.node < plan.active_nodes())
      for (int r : node_rank_ranks(s.node, plan.tasks_per_node)) s.ranks.push_back(r);
    s.keepers = plan.restarts;
  }
  s.port_wait = std::chrono::seconds(st.site.port_wait_s);
  s.kill_grace = std::chrono::seconds(st.site.kill_grace_s);
  s.heartbeat_timeout = std::chrono::seconds(st.site.heartbeat_timeout_s);
  // A spare may take this node's place: unheard this long, the agent kills its programs.
  if (plan.restarts && plan.spares > 0) s.fence_after = std::chrono::seconds(st.site.fence_after_s);
  s.on_failure = st.layout.options.on_failure.value_or(st.site.on_failure);
  // The node's role and the step's store, as the plan decides them: a
  // launcher step's agent watches the workers; with the step's store it
  // serves it. (srun refused a shape the plan refuses.)
  s.watch_workers = !plan.launch.launcher.empty();
  s.serve_store = plan.store == StoreKind::step;
  // The agent's own timeouts end it first; this bounds one that hangs.
  a.wait = s.port_wait + std::chrono::seconds(5);
  return a;
}

// Starts the node agent, which also carries the step's ports from the
// master node (leased, or its failure, published write-once) to the others.
// Returns MASTER_PORT: the coordinator port, or with the step's store the
// node agent's store; the agent's socket is exported to the tasks.
Result<int> start_node_agent(spank_t sp, StepdState& st, const LayoutPlan& plan) {
  if (!st.facts.env.rdv_addr || !st.facts.env.rdv_secret)
    return make_error(Errc::internal,
                      "the step has no rendezvous address (DP_RDV_ADDR); srun did not "
                      "prepare it: is spank_dp.so in srun's plugstack.conf too?");
  AgentStart start = agent_start(st, plan);
  agent::AgentSettings& s = start.settings;
  const PortsRequest req{st.facts, st.site, st.layout.options, st.dp_port_count, st.store};
  Result<StepPorts> mine = plan_node_ports(req, st.ports, s);
  // The held ports' sockets the agent keeps past rank 0's exec (at its fds 3, 4, ...).
  s.held_ports = st.ports.shared_ports;
  std::vector<int> held_fds;
  for (int port : st.ports.shared_ports) held_fds.push_back(st.ports.hold.fd(port));
  auto answer = start_agent(agent_path_beside(daemon_path(st.site)), st.facts.user, s, start.wait,
                            st.agent, held_fds);
  DP_TRY(mine);
  // The master node's own failure, as the agent learnt it (published, or
  // carried by the daemon's abort when this node's hello came too late).
  if (answer && answer->master_failure)
    return make_error(Errc::aborted, master_failure_text(*answer->master_failure));
  if (!answer) {
    if (s.master != PortsRole::fetch)
      return wrap_error(answer.error(), "node agent: " + answer.error().message);
    return wrap_error(answer.error(),
                      "MASTER_PORT: no answer from the master node through the node agent "
                      "(waiting at most port_wait=" +
                          std::to_string(st.site.port_wait_s) + " s): " + answer.error().message);
  }
  if (const spank_err_t rc = spank_setenv(sp, env::kAgentSocket, answer->socket.c_str(), 1);
      rc != ESPANK_SUCCESS)
    return make_error(Errc::internal,
                      "cannot set DP_AGENT_SOCKET for the tasks: " + spank_text(rc));
  st.agent_socket = answer->socket;
  // The agent's abstract socket lives in this network namespace (the agent
  // is our child): a task in another one is told why it cannot reach it.
  const std::string netns = rdv::network_namespace();
  if (!netns.empty()) spank_setenv(sp, env::kAgentNetns, netns.c_str(), 1);
  if (s.master == PortsRole::fetch) {
    if (answer->port < 1) return make_error(Errc::protocol, "the node agent gave no MASTER_PORT");
    if (answer->dp_ports.size() != static_cast<size_t>(st.dp_port_count))
      return make_error(Errc::protocol,
                        "the node agent gave " + std::to_string(answer->dp_ports.size()) +
                            " of the step's " + std::to_string(st.dp_port_count) + " DP_PORTS");
    mine = StepPorts{answer->port, answer->dp_ports};
  }
  st.ports.ports = *mine;
  st.nccl_watch = NcclWatchPlaces{answer->flight_dir, answer->ras_port};
  if (st.store != StoreKind::step) return st.ports.ports.coordinator;
  if (answer->store_port < 1)
    return make_error(Errc::protocol, "the node agent gave no port for the step's store");
  return answer->store_port;
}

// The step's set-up on this node; an error fails every task of the node.
Result<void> set_up_node(spank_t sp, StepdState& st) {
  if (state().option_error)
    return make_error(Errc::invalid_argument, "srun passed an invalid --dp-* value to the node");
  // srun writes its step's ids and options; others (an enclosing step's, or
  // the user's own) mean srun did not prepare this step. Only checked and
  // read, never a reason to act.
  const JobEnvironment& env = st.facts.env;
  DP_TRY(check_srun_prepared(env, st.facts.id.job, st.facts.id.step));
  auto opts = parse_node_options(*env.options, env::kOptions);
  DP_TRY(opts);
  st.layout = node_facts(st.facts, st.site);
  st.layout.options = *opts;
  const VisibleDevices& given = *st.layout.nodes.front().given;
  slurm_debug("slurm-dp: step %s node devices cuda=%s ze=%s options %s", st.facts.id.text().c_str(),
              given.cuda ? shown_value(*given.cuda, 512).c_str() : "-",
              given.ze ? shown_value(*given.ze, 512).c_str() : "-",
              shown_value(*env.options, 512).c_str());
  auto plan = plan_layout(st.layout);
  DP_TRY(plan);
  st.dp_port_count = plan->dp_port_count;
  st.store = plan->store;
  auto port = start_node_agent(sp, st, *plan);
  DP_TRY(port);
  if (const spank_err_t rc = spank_setenv(sp, env::kMasterPort, std::to_string(*port).c_str(), 1);
      rc != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot set MASTER_PORT for the tasks: " + spank_text(rc));
  st.master_port = *port;
  st.master_addr = env.master_addr.value_or("");  // srun's, for the tasks
  return {};
}

// The task's whole environment from the one layout entry: this node's facts,
// with how Slurm binds devices to tasks (SLURMD_TRES_BIND, which slurmstepd
// sets from the step's request just before this callback) and what it set in
// the task, and where the step meets (set_up_node's). In the task's own
// process, as the job's user.
Result<EnvList> task_variables(spank_t sp, const StepdState& st, const TaskPlace& place) {
  StepFacts f = st.layout;
  f.request = parse_device_request("", "", "", job_env(sp, "SLURMD_TRES_BIND").value_or(""));
  auto plan = plan_layout(f);
  DP_TRY(plan);
  const VisibleDevices task_visible{job_env(sp, env::kCudaVisibleDevices),
                                    job_env(sp, env::kZeAffinityMask)};
  auto tiles = task_tiles(*plan, st.site, 0, task_visible, place.local_rank);
  DP_TRY(tiles);
  const StepPorts& ports = st.ports.ports;
  const StepMeeting meeting{st.master_addr, std::to_string(st.master_port),
                            std::to_string(ports.coordinator), ports_text(ports.dp_ports)};
  return whole_task_environment(*plan, st.site, place, *tiles, meeting);
}

// This task's place in the step, from slurmstepd.
Result<TaskPlace> task_place(spank_t sp) {
  uint32_t rank = 0, local_count = 0, node_id = 0;
  int local_rank = 0;
  spank_err_t rc{};  // ESPANK_SUCCESS until a call fails
  if ((rc = spank_get_item(sp, S_TASK_GLOBAL_ID, &rank)) != ESPANK_SUCCESS ||
      (rc = spank_get_item(sp, S_TASK_ID, &local_rank)) != ESPANK_SUCCESS ||
      (rc = spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_count)) != ESPANK_SUCCESS ||
      (rc = spank_get_item(sp, S_JOB_NODEID, &node_id)) != ESPANK_SUCCESS)
    return make_error(Errc::internal,
                      "cannot read this task's place from slurmstepd: " + spank_text(rc));
  return TaskPlace{static_cast<int>(rank), local_rank, static_cast<int>(local_count),
                   static_cast<int>(node_id)};
}

// srun's --dp-explain counts each node's devices from 0, before launch. Where
// Slurm names them otherwise here (gres.conf Flags=env_uuid's UUIDs, or
// global indexes), each task of the explained step prints its real mask.
void prepare_explained_masks(StepdState& st) {
  const JobEnvironment& env = st.facts.env;
  if (!env.options) return;
  auto opts = parse_node_options(*env.options, env::kOptions);
  StepFacts facts = node_facts(st.facts, st.site);
  if (!opts || devices_named_by_position(st.site, *facts.nodes.front().given)) return;
  st.layout = std::move(facts);
  st.layout.options = *opts;
  st.explain_masks = true;
}

void print_explained_mask(spank_t sp, const StepdState& st) {
  auto place = task_place(sp);
  auto vars = place ? task_variables(sp, st, *place) : Result<EnvList>(place.error());
  std::string line = "slurm-dp: task " + std::to_string(place ? place->rank : -1) + " on " +
                     st.facts.node + ", as launched:";
  if (!vars) {
    line += " " + vars.error().message;
  } else {
    for (const auto& [name, value] : *vars)
      if (name == env::kCudaVisibleDevices || name == env::kZeAffinityMask || name == env::kTiles)
        line += " " + name + "=" + value;
  }
  line += " (Slurm names this node's devices so; the task lines above count them from 0)\n";
  (void)!write(STDOUT_FILENO, line.data(), line.size());
}

}  // namespace

int stepd_init_post_opt(spank_t sp) {
  StepdState& st = stepd();
  const PluginState& plugin = state();
  JobStep id;
  if (!read_job_step(sp, id)) return 0;
  // Options Slurm carried (or the site's default) make a slurm-dp step;
  // the user's DP_* variables never do.
  if (!plugin.cli_options.any() && !st.site.default_on && !plugin.option_error) return 0;
  st.active = true;
  report_site_warnings(st.site);
  auto facts = read_stepd_facts(sp, id);
  Result<void> ok = facts ? Result<void>() : Result<void>(facts.error());
  if (facts) {
    st.facts = std::move(*facts);
    // srun explained or refused the step and told its user why: nothing to
    // set up, every task ends before the program.
    st.skip_status = skipped_status(st.facts.env, id.job, id.step);
    if (st.skip_status) {
      if (*st.skip_status == 0) prepare_explained_masks(st);
      return 0;
    }
    ok = set_up_node(sp, st);
  }
  if (!ok) {
    // Returned from here, Slurm would only log "Plugin initialization
    // failed" and srun would exit 0; failing every task in task_init makes
    // srun say why and exit non-zero.
    st.setup_error = "step " + id.text() + " on node " + node_name() + ": " + ok.error().message;
    slurm_error("slurm-dp: %s", st.setup_error.c_str());
  }
  return 0;
}

// In the task's process, as its user: NCCL ranks' hang evidence (core's
// nccl_watch.hpp), never over what the user set. The folder only where the
// task sees the agent's own (a container with a /tmp of its own does not, and
// PyTorch would fail to make its pipe there).
static void set_nccl_watch(spank_t sp, const StepdState& st) {
  NcclWatchPlaces places = st.nccl_watch;
  struct stat dir {};
  if (places.dump_dir.empty() || ::stat(places.dump_dir.c_str(), &dir) != 0 ||
      !S_ISDIR(dir.st_mode) || dir.st_uid != ::getuid())
    places.dump_dir.clear();
  auto user_has = [&](std::string_view name) {
    char one[2];
    return spank_getenv(sp, std::string(name).c_str(), one, sizeof one) != ESPANK_ENV_NOEXIST;
  };
  for (const auto& [name, value] : nccl_watch_environment(places, user_has))
    spank_setenv(sp, name.c_str(), value.c_str(), 0);
}

// A plugin earlier in task_init may have set these too: pyxis imports a
// container image's environment with overwrite, and NGC images carry
// enroot's MASTER_ADDR/MASTER_PORT. Ours load after it (the snippet's name
// collates after pyxis.conf), so the step's own values win. `extra` after
// the plan's (a restart's count).
static Result<void> set_task_variables(spank_t sp, const StepdState& st, const TaskPlace& place,
                                       const EnvList& extra = {}) {
  auto vars = task_variables(sp, st, place);
  DP_TRY(vars);
  vars->insert(vars->end(), extra.begin(), extra.end());
  for (const auto& [name, value] : *vars)
    if (const spank_err_t rc = spank_setenv(sp, name.c_str(), value.c_str(), 1);
        rc != ESPANK_SUCCESS)
      return make_error(Errc::internal, "cannot set " + name + " for task " +
                                            std::to_string(place.rank) + ": " + spank_text(rc));
  set_nccl_watch(sp, st);
  return {};
}

// A step that restarts in place (--dp-spares, --dp-max-restarts): the task
// keeps its program (task_keeper.hpp); each start gets the variables of the
// node rank its node holds then (a spare's: the lost node's) and the restart
// count. nullopt: an ordinary task.
static std::optional<KeeperPlan> keeper_plan(spank_t sp, const StepdState& st,
                                             const TaskPlace& slurm) {
  auto plan = plan_layout(st.layout);
  if (!plan || !plan->restarts) return std::nullopt;
  KeeperPlan k;
  k.socket = st.agent_socket + agent::kKeeperSuffix;
  k.local = slurm.local_rank;
  const int per_node = plan->tasks_per_node;
  k.prepare = [sp, &st, local = slurm.local_rank, per_node](int node_rank, int count) {
    return set_task_variables(sp, st, acting_place(node_rank, local, per_node),
                              restart_environment(count));
  };
  return k;
}

int stepd_task_init(spank_t sp) {
  StepdState& st = stepd();
  if (!st.active) return 0;
  // In the task's own process, before the program: Slurm ends a task whose
  // plugin stack fails the same way, but with an error line of its own.
  if (st.skip_status) {
    if (st.explain_masks) print_explained_mask(sp, st);
    std::_Exit(*st.skip_status);
  }
  auto place = task_place(sp);
  if (!place) {
    report_error(place.error().message);
    return -1;
  }
  const int rank = place->rank;
  // Only rank 0 keeps MASTER_PORT's hold to its exec: another task's copy
  // would keep rank 0's program from binding the port.
  if (rank != 0) st.ports.hold.drop_task_copy();
  if (!st.setup_error.empty()) {
    report_error(st.setup_error);  // the task's stderr: srun shows it
    return -1;
  }
  // A port list root refused is named once, by rank 0 (srun's stderr).
  if (rank == 0 && !st.ports.refusal.empty())
    report_error("warning: " + st.ports.refusal + " (node " + st.facts.node + ")");
  auto ready = rank == 0 ? ports_before_exec(sp, st.ports, st.layout.options) : Result<void>();
  if (!ready) {
    report_error(ready.error().message + " (node " + st.facts.node + ")");
    return -1;
  }
  if (auto keeper = keeper_plan(sp, st, *place)) return keep_task(*keeper);
  auto set = set_task_variables(sp, st, *place);
  if (!set) {
    report_error(set.error().message + " (node " + st.facts.node + ")");
    return -1;
  }
  // Rank 0 keeps its copy of MASTER_PORT's hold through the task prologs
  // (TaskProlog, srun --task-prolog) to its exec, which closes it.
  return 0;
}

// The task is forked and cannot have been reaped yet (slurmstepd reaps it
// after this callback returns): its pid and start time name it exactly.
int stepd_task_post_fork(spank_t sp) {
  StepdState& st = stepd();
  // Every task's process has its copy of MASTER_PORT's hold now.
  st.ports.hold.let_go_in_stepd();
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
  StepdState& st = stepd();
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
  StepdState& st = stepd();
  stop_agent(st.agent);
  st.ports.release();
  return 0;
}

}  // namespace dp::spank
