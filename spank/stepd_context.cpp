// slurmstepd (S_CTX_REMOTE): on every node of a slurm-dp step, settle
// MASTER_PORT (once per node, as root, before tasks fork) and give each
// task its ranks and accelerator mask (in the task, just before exec).
//
// Root here never acts on what the user's environment says: a step is a
// slurm-dp step because Slurm carried --dp-* values (or the site set
// default=on), and everything that talks to the step's daemon, whose
// address the user's srun chose, runs in the node agent (dp-nodeagent, as
// the job's user; agent_launcher.hpp). Root reads back one validated line.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
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
#include "dp/step_ports.hpp"
#include "dp/step_store.hpp"
#include "master_socket.hpp"
#include "plugin_state.hpp"
#include "port_lease.hpp"
#include "skipped_step.hpp"
#include "slurm_step.hpp"
#include "socket_tables.hpp"
#include "step_port_hold.hpp"
#include "unix_connect.hpp"  // dp_sockets
#include "user_child.hpp"

namespace dp::spank {

namespace {

// What slurmstepd holds for its step between Slurm's callbacks. Whether a
// step is a slurm-dp step is decided from the options Slurm carries to
// slurmstepd (the shared cli_options, filled by the remote option
// callbacks) or the site's default=on, never from DP_* variables, which the
// user may set to anything. Their values come from the one value srun
// resolved (DP_OPTIONS), in facts.options.
struct StepdState {
  const SiteConfig& site = state().site;  // the plugin line's (slurm_spank_init)
  bool active = false;                    // this step is a slurm-dp step
  StepFacts facts;                        // this node's part of the step, for the layout core
  std::string setup_error;                // set-up failed: every task fails with it
  std::optional<int> skip_status;         // srun explained or refused the step: each task exits so
  bool explain_masks = false;  // an explained step where Slurm names devices otherwise than srun
  std::string master_addr;     // set again in each task, after earlier plugins
  int master_port = 0;         // likewise
  StepPorts step_ports;        // rank 0's node's: coordinator (JAX's) and DP_PORTS
  StoreKind store = StoreKind::rank0;  // --dp-store=step: MASTER_* name the agent's store
  NcclWatchPlaces nccl_watch;          // the agent's flight-recorder folder and RAS port
  std::vector<PortLease> leases;  // the master node's leases of the step's ports, released at end
  StepPortHold hold;              // the master node's step ports, bound until rank 0's exec
  std::vector<int> shared_ports;  // of those, the ones the agent holds on (PortHold::to_listen)
  NodeAgent agent;                // this node's dp-nodeagent; stopped at step end
  uint32_t tasks_ended = 0;       // task exits told to the agent
};

StepdState& stepd() {
  static StepdState s;
  return s;
}

std::optional<std::string> job_env(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return std::nullopt;
  return std::string(buf);
}

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME")) return shown_value(n, 128);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

struct JobStep {
  uint32_t job = 0, step = 0;
  std::string text() const { return std::to_string(job) + "." + std::to_string(step); }
};

// What the node agent needs, read by root before the fork.
struct AgentStart {
  agent::AgentSettings settings;
  StoreKind store = StoreKind::rank0;
  std::chrono::milliseconds wait{};  // the site's port_wait and a margin (agent_start)
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
  f.devices_confined = devices_confined_here();
  f.nodes = {NodeDevices{std::nullopt, VisibleDevices{job_env(sp, env::kCudaVisibleDevices),
                                                      job_env(sp, env::kZeAffinityMask)}}};
  f.site = site;
  return f;
}

Result<AgentStart> agent_start(spank_t sp, const StepdState& st, const JobStep& id) {
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
  s.on_failure = st.facts.options.on_failure.value_or(st.site.on_failure);
  // The node's role and the step's store, as the plan decides them: a
  // launcher step's agent watches the workers; with the step's store it
  // serves it. (srun refused a shape the plan refuses.)
  auto plan = plan_layout(st.facts);
  DP_TRY(plan);
  s.watch_workers = !plan->launch.launcher.empty();
  a.store = plan->store;
  s.serve_store = a.store == StoreKind::step;
  // The agent's own timeouts end it first; this bounds one that hangs.
  a.wait = s.port_wait + std::chrono::seconds(5);
  return a;
}

// A Slurm-reserved port on the master node, held like a leased one. Slurm
// reserved it for this step alone, but a process that binds ports in a loop
// may have it for a moment: it is tried for a second before it counts as
// taken. Where only connections in TIME_WAIT keep it (an earlier program's,
// whose socket had no SO_REUSEADDR: for a minute nobody can bind the port),
// the step goes on with it unheld, as before the hold, for a program that may
// not bind it.
Result<HeldPort> hold_reserved_port(int port) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  UniqueFd socket = hold_port(port);
  while (!socket && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded by the deadline
    socket = hold_port(port);
  }
  if (socket) return HeldPort{port, std::move(socket)};
  const PortHolders h = port_holders_here(port, port);
  if (h.by_uid.empty() && h.time_wait) {
    slurm_info(
        "slurm-dp: port %d, reserved by Slurm, has connections in TIME_WAIT that keep every "
        "binder out for now: not held",
        port);
    return HeldPort{port, UniqueFd()};
  }
  return make_error(Errc::unavailable,
                    "port " + std::to_string(port) +
                        ", which Slurm reserved for this step (SLURM_STEP_RESV_PORTS), is bound "
                        "by another process on the master node (" +
                        port_holder_text(port) +
                        "); Slurm gives each port of MpiParams=ports= to one step at a time, so "
                        "an admin can end that process; or pass --dp-master-port=PORT");
}

// The held ports that stay held past rank 0's exec until the program listens
// (PortHold::to_listen) become the job's user's to share; st.shared_ports
// lists them for the node agent, which keeps a copy of each.
void share_held_ports(StepdState& st, const std::vector<HeldPort>& held, const StepPorts& ports,
                      bool coordinator_held, uid_t owner) {
  const bool step_store = st.store == StoreKind::step;
  st.shared_ports.clear();
  for (const HeldPort& h : held) {
    const bool coordinator = coordinator_held && h.port == ports.coordinator;
    if (!h.socket || port_hold(coordinator ? StepPort::coordinator : StepPort::dp_port,
                               st.facts.options, step_store) != PortHold::to_listen)
      continue;
    if (auto ok = share_hold_with_user(h.socket.get(), owner); !ok) {
      slurm_info("slurm-dp: port %d: %s; held to rank 0's start only", h.port,
                 ok.error().message.c_str());
      continue;
    }
    st.shared_ports.push_back(h.port);
  }
}

// The master node takes the step's ports and holds them from now until rank
// 0's exec (or, shared with the job's user, until its program listens):
// Slurm's reservation, or --dp-master-port (not held: the user's choice) and
// leases of the site's range.
Result<StepPorts> take_ports(spank_t sp, StepdState& st, const JobStep& id, const KnownPorts& known,
                             int dp_port_count) {
  std::vector<HeldPort> held;
  StepPorts ports;
  uid_t owner = 0;
  if (spank_get_item(sp, S_JOB_UID, &owner) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot read the job's uid from slurmstepd");
  if (known.reserved) {
    ports = *known.reserved;
    std::vector<int> all{ports.coordinator};
    all.insert(all.end(), ports.dp_ports.begin(), ports.dp_ports.end());
    for (int port : all) {
      auto h = hold_reserved_port(port);
      DP_TRY(h);
      held.push_back(std::move(*h));
    }
  } else {
    LeaseRequest req = lease_request(st.site, owner, id.text());
    req.dp_port_count = dp_port_count;
    req.master_fixed = known.fixed.has_value();
    auto leases = lease_ports(st.site, req);
    DP_TRY(leases);
    for (PortLease& l : *leases) held.push_back({l.port(), l.take_hold()});
    st.leases = std::move(*leases);
    size_t next = 0;
    ports.coordinator = known.fixed ? *known.fixed : held[next++].port;
    for (; next < held.size(); ++next) ports.dp_ports.push_back(held[next].port);
  }
  share_held_ports(st, held, ports, !known.fixed, owner);
  auto kept = st.hold.keep(std::move(held));
  DP_TRY(kept);
  return ports;
}

// This node's ports as the core decides its part (dp::node_ports): the master
// node takes and holds them and publishes them, or why it has none (the step
// report shows them; a failure becomes the step's first); another node knows
// them or has its agent fetch them. Returns the ports this node knows now
// (none where it fetches) or the failure, published by then.
Result<StepPorts> plan_node_ports(spank_t sp, StepdState& st, const JobStep& id,
                                  agent::AgentSettings& s) {
  const int dp_port_count = st.facts.options.dp_port_count.value_or(0);
  uint32_t local_of_rank0 = 0, nnodes = 1;
  const bool master =
      spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, uint32_t{0}, &local_of_rank0) == ESPANK_SUCCESS;
  spank_get_item(sp, S_JOB_NNODES, &nnodes);
  const std::optional<std::string> resv = job_env(sp, "SLURM_STEP_RESV_PORTS");
  const auto known = known_ports(st.facts.options, st.site, resv);
  const NodePorts part = node_ports(known, master, static_cast<int>(nnodes), dp_port_count);
  s.master = part.role;
  Result<StepPorts> mine = StepPorts{};
  if (!known) mine = Result<StepPorts>(known.error());
  else if (part.take) mine = take_ports(sp, st, id, *known, dp_port_count);
  else if (part.known) mine = *part.known;
  if (part.role == PortsRole::publish) {
    if (mine) {
      s.published = mine->coordinator;
      s.published.dp_ports = mine->dp_ports;
    } else {
      s.published = MasterFailure{node_name(), mine.error().message};
    }
  }
  return mine;
}

// Starts the node agent, which also carries the step's ports from the
// master node (leased, or its failure, published write-once) to the others.
// Returns MASTER_PORT: the coordinator port, or with the step's store the
// node agent's store; the agent's socket is exported to the tasks.
Result<int> start_node_agent(spank_t sp, StepdState& st, const JobStep& id) {
  auto start = agent_start(sp, st, id);
  DP_TRY(start);
  st.store = start->store;
  const int dp_port_count = st.facts.options.dp_port_count.value_or(0);
  agent::AgentSettings& s = start->settings;
  Result<StepPorts> mine = plan_node_ports(sp, st, id, s);
  // The held ports' sockets the agent keeps past rank 0's exec (at its fds 3, 4, ...).
  s.held_ports = st.shared_ports;
  std::vector<int> held_fds;
  for (int port : st.shared_ports) held_fds.push_back(st.hold.fd(port));
  auto answer = start_agent(agent_path_beside(daemon_path(st.site)), start->ids, s, start->wait,
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
  if (spank_setenv(sp, env::kAgentSocket, answer->socket.c_str(), 1) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot set DP_AGENT_SOCKET for the tasks");
  // The agent's abstract socket lives in this network namespace (the agent
  // is our child): a task in another one is told why it cannot reach it.
  const std::string netns = rdv::network_namespace();
  if (!netns.empty()) spank_setenv(sp, env::kAgentNetns, netns.c_str(), 1);
  if (s.master == PortsRole::fetch) {
    if (answer->port < 1) return make_error(Errc::protocol, "the node agent gave no MASTER_PORT");
    if (answer->dp_ports.size() != static_cast<size_t>(dp_port_count))
      return make_error(Errc::protocol,
                        "the node agent gave " + std::to_string(answer->dp_ports.size()) +
                            " of the step's " + std::to_string(dp_port_count) + " DP_PORTS");
    mine = StepPorts{answer->port, answer->dp_ports};
  }
  st.step_ports = *mine;
  st.nccl_watch = NcclWatchPlaces{answer->flight_dir, answer->ras_port};
  if (st.store != StoreKind::step) return st.step_ports.coordinator;
  if (answer->store_port < 1)
    return make_error(Errc::protocol, "the node agent gave no port for the step's store");
  return answer->store_port;
}

// The exit status of every task of a step srun explained or refused
// (skipped_step.hpp). srun refuses every heterogeneous step, and only the
// first component's nodes get the variables srun sets.
std::optional<int> skipped_status(spank_t sp, const JobStep& id) {
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
Result<void> set_up_node(spank_t sp, StepdState& st, const JobStep& id) {
  if (state().option_error)
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
              given.cuda ? shown_value(*given.cuda, 512).c_str() : "-",
              given.ze ? shown_value(*given.ze, 512).c_str() : "-",
              shown_value(*options, 512).c_str());
  auto port = start_node_agent(sp, st, id);
  DP_TRY(port);
  if (spank_setenv(sp, env::kMasterPort, std::to_string(*port).c_str(), 1) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot set MASTER_PORT for the tasks");
  st.master_port = *port;
  st.master_addr = job_env(sp, env::kMasterAddr).value_or("");  // srun's, for the tasks
  return {};
}

// The task's whole environment from the one layout entry: this node's facts,
// with how Slurm binds devices to tasks (SLURMD_TRES_BIND, which slurmstepd
// sets from the step's request just before this callback) and what it set in
// the task, and where the step meets (set_up_node's).
Result<EnvList> task_variables(spank_t sp, const StepdState& st, const TaskPlace& place) {
  StepFacts f = st.facts;
  f.request = parse_device_request("", "", "", job_env(sp, "SLURMD_TRES_BIND").value_or(""));
  auto plan = plan_layout(f);
  DP_TRY(plan);
  const VisibleDevices task_visible{job_env(sp, env::kCudaVisibleDevices),
                                    job_env(sp, env::kZeAffinityMask)};
  auto tiles = task_tiles(*plan, st.site, 0, task_visible, place.local_rank);
  DP_TRY(tiles);
  const StepMeeting meeting{st.master_addr, std::to_string(st.master_port),
                            std::to_string(st.step_ports.coordinator),
                            ports_text(st.step_ports.dp_ports)};
  return whole_task_environment(*plan, st.site, place, *tiles, meeting);
}

// Rank 0, just before exec, with the copies of the step's ports' hold it
// inherited (on the master node): with --dp-master-socket=pass each port is
// handed to the program listening (MASTER_PORT as DP_MASTER_LISTEN_FD, the
// --dp-ports as DP_PORTS_LISTEN_FDS), so none is ever free; otherwise each
// hold is checked to still keep its port to the step.
Result<void> ports_before_exec(spank_t sp, const StepdState& st) {
  std::vector<int> all{st.step_ports.coordinator};
  all.insert(all.end(), st.step_ports.dp_ports.begin(), st.step_ports.dp_ports.end());
  if (!st.facts.options.passes_master_socket()) {
    for (int port : all) DP_TRY(check_step_port_before_exec(st.hold.fd(port), port));
    return {};
  }
  std::vector<UniqueFd> fds;
  for (int port : all) {
    auto fd = master_listen_socket(st.hold.fd(port), port);
    DP_TRY(fd);
    fds.push_back(std::move(*fd));
  }
  std::vector<int> ports_fds;
  for (size_t i = 1; i < fds.size(); ++i) ports_fds.push_back(fds[i].get());
  if (spank_setenv(sp, env::kMasterListenFd, std::to_string(fds[0].get()).c_str(), 1) !=
          ESPANK_SUCCESS ||
      (!ports_fds.empty() &&
       spank_setenv(sp, env::kPortsListenFds, ports_text(ports_fds).c_str(), 1) != ESPANK_SUCCESS))
    return make_error(Errc::internal, std::string("cannot set ") + env::kMasterListenFd + " or " +
                                          env::kPortsListenFds);
  for (UniqueFd& fd : fds) fd.release();  // the program's from here (not close-on-exec)
  return {};
}

// This task's place in the step, from slurmstepd.
Result<TaskPlace> task_place(spank_t sp) {
  uint32_t rank = 0, local_count = 0, node_id = 0;
  int local_rank = 0;
  if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_ID, &local_rank) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_count) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot read this task's place from slurmstepd");
  return TaskPlace{static_cast<int>(rank), local_rank, static_cast<int>(local_count),
                   static_cast<int>(node_id)};
}

// srun's --dp-explain counts each node's devices from 0, before launch. Where
// Slurm names them otherwise here (gres.conf Flags=env_uuid's UUIDs, or
// global indexes), each task of the explained step prints its real mask.
void prepare_explained_masks(spank_t sp, StepdState& st) {
  const auto options = job_env(sp, env::kOptions);
  auto facts = node_facts(sp, st.site);
  if (!options || !facts) return;
  auto opts = parse_node_options(*options, env::kOptions);
  if (!opts || devices_named_by_position(st.site, *facts->nodes.front().given)) return;
  st.facts = std::move(*facts);
  st.facts.options = *opts;
  st.explain_masks = true;
}

void print_explained_mask(spank_t sp, const StepdState& st) {
  auto place = task_place(sp);
  auto vars = place ? task_variables(sp, st, *place) : Result<EnvList>(place.error());
  std::string line = "slurm-dp: task " + std::to_string(place ? place->rank : -1) + " on " +
                     node_name() + ", as launched:";
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
  if (spank_get_item(sp, S_JOB_ID, &id.job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &id.step) != ESPANK_SUCCESS || is_special_step(id.step))
    return 0;
  // Options Slurm carried (or the site's default) make a slurm-dp step;
  // the user's DP_* variables never do.
  if (!plugin.cli_options.any() && !st.site.default_on && !plugin.option_error) return 0;
  st.active = true;
  report_site_warnings(st.site);
  // srun explained or refused the step and told its user why: nothing to
  // set up, every task ends before the program.
  st.skip_status = skipped_status(sp, id);
  if (st.skip_status) {
    if (*st.skip_status == 0) prepare_explained_masks(sp, st);
    return 0;
  }
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
  if (rank != 0) st.hold.drop_task_copy();
  if (!st.setup_error.empty()) {
    report_error(st.setup_error);  // the task's stderr: srun shows it
    return -1;
  }
  if (auto ready = rank == 0 ? ports_before_exec(sp, st) : Result<void>(); !ready) {
    report_error(ready.error().message + " (node " + node_name() + ")");
    return -1;
  }
  auto vars = task_variables(sp, st, *place);
  if (!vars) {
    report_error(vars.error().message + " (node " + node_name() + ")");
    return -1;
  }
  // A plugin earlier in task_init may have set these too: pyxis imports a
  // container image's environment with overwrite, and NGC images carry
  // enroot's MASTER_ADDR/MASTER_PORT. Ours load after it (the snippet's
  // name collates after pyxis.conf), so the step's own values win.
  for (const auto& [name, value] : *vars)
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
      report_error("cannot set " + name + " for task " + std::to_string(rank));
      return -1;
    }
  set_nccl_watch(sp, st);
  // Rank 0 keeps its copy of MASTER_PORT's hold through the task prologs
  // (TaskProlog, srun --task-prolog) to its exec, which closes it.
  return 0;
}

// The task is forked and cannot have been reaped yet (slurmstepd reaps it
// after this callback returns): its pid and start time name it exactly.
int stepd_task_post_fork(spank_t sp) {
  StepdState& st = stepd();
  // Every task's process has its copy of MASTER_PORT's hold now.
  st.hold.let_go_in_stepd();
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
  st.hold.stop();
  st.leases.clear();  // releases each
  return 0;
}

}  // namespace dp::spank
