// slurmstepd (S_CTX_REMOTE): on every node of a slurm-dp step, settle
// MASTER_PORT (once per node, as root, before tasks fork) and give each
// task its ranks and accelerator mask (in the task, just before exec).
//
// Root here never acts on what the user's environment says: a step is a
// slurm-dp step because Slurm carried --dp-* values (or the site set
// default=on), and the master-port exchange with the step's daemon, whose
// address the user's srun chose, runs in a child that has become the job's
// user (user_child.hpp). Root reads back a few validated bytes.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "contexts.hpp"
#include "dp/env_names.hpp"
#include "dp/layout.hpp"
#include "dp/master_port.hpp"
#include "dp/options.hpp"
#include "plugin_state.hpp"
#include "port_lease.hpp"
#include "rendezvous_client.hpp"
#include "user_child.hpp"

namespace dp::spank {

namespace {

constexpr const char* kMasterPortKey = "dp/master_port";
// A published value starting with this is the master node's failure, not a port.
constexpr char kFailureMark = '!';
// The exchange only ever reads a port or a short message.
constexpr uint32_t kExchangeMaxFrame = 4096;

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

// What the unprivileged child needs, read by root before the fork.
struct Exchange {
  std::string addr, secret, hostname;
  std::chrono::seconds wait{60};
  UserIds ids;
};

Result<Exchange> exchange_settings(spank_t sp, const SiteConfig& site) {
  Exchange x;
  auto addr = job_env(sp, env::kRdvAddr);
  auto secret = job_env(sp, env::kRdvSecret);
  if (!addr || !secret)
    return make_error(Errc::internal,
                      "the step has no rendezvous address (DP_RDV_ADDR); srun did not "
                      "prepare it: is spank_dp.so in srun's plugstack.conf too?");
  if (spank_get_item(sp, S_JOB_UID, &x.ids.uid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_GID, &x.ids.gid) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot read the job's uid/gid from slurmstepd");
  x.addr = *addr;
  x.secret = *secret;
  x.hostname = node_name();
  x.wait = std::chrono::seconds(site.port_wait_s);
  return x;
}

// In the child, as the job's user: publish `value` (master node) or fetch
// the master node's value (the others).
Result<std::string> talk_to_daemon(const Exchange& x, const std::optional<std::string>& value) {
  ClientOptions o;
  DP_TRY(RendezvousClient::parse_address(x.addr, o));
  o.secret = x.secret;
  o.role = PeerRole::agent;
  o.hostname = x.hostname;
  o.connect_timeout = x.wait;
  o.call_timeout = x.wait;
  o.max_reply_frame = kExchangeMaxFrame;
  auto client = RendezvousClient::connect(o);
  DP_TRY(client);
  if (value) {
    DP_TRY((*client)->set(kMasterPortKey, *value));
    (void)(*client)->goodbye();
    return std::string("published");
  }
  auto got = (*client)->get(kMasterPortKey, x.wait);
  (void)(*client)->goodbye();
  return got;
}

Result<std::string> exchange(spank_t sp, const SiteConfig& site,
                             const std::optional<std::string>& value) {
  auto x = exchange_settings(sp, site);
  DP_TRY(x);
  // The child's own timeouts end it first; this bounds a child that hangs.
  return run_as_user(x->ids, x->wait + std::chrono::seconds(5),
                     [&]() { return talk_to_daemon(*x, value); });
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

Result<int> parse_port_answer(const std::string& v) {
  if (!v.empty() && v[0] == kFailureMark)
    return make_error(Errc::aborted,
                      "the master node could not set up the step: " + sanitize(v.substr(1)));
  auto port = parse_integer(v, 1, 65535, "MASTER_PORT", "29500");
  if (!port)
    return make_error(Errc::protocol, "the step's daemon answered '" + sanitize(v, 64) +
                                          "' for MASTER_PORT, not a port");
  return static_cast<int>(*port);
}

// The master node leases a port and publishes it, or publishes its failure
// so the other nodes stop at once with its cause.
Result<std::string> master_node_port(spank_t sp, PluginState& st, const StepIds& id, bool alone) {
  auto port = take_lease(sp, st, id);
  if (alone) {
    DP_TRY(port);
    return std::to_string(*port);
  }
  const std::string value =
      port ? std::to_string(*port)
           : kFailureMark + ("node " + node_name() + ": " + port.error().message);
  auto published = exchange(sp, st.site, value);
  DP_TRY(port);
  if (!published)
    return make_error(published.error().code,
                      "cannot give MASTER_PORT to the other nodes through the "
                      "step's daemon: " +
                          sanitize(published.error().message));
  return std::to_string(*port);
}

// MASTER_PORT for this node's tasks: --dp-master-port, Slurm's reservation,
// else a leased port on the master node, shared through the daemon.
Result<std::string> settle_master_port(spank_t sp, PluginState& st, const StepIds& id) {
  if (st.cli_options.master_port.value_or(0) > 0)
    return std::to_string(*st.cli_options.master_port);
  auto resv = st.site.use_resv_ports ? job_env(sp, "SLURM_STEP_RESV_PORTS") : std::nullopt;
  if (resv) {
    auto first = first_reserved_port(*resv);
    DP_TRY(first);
    if (first->has_value()) return std::to_string(**first);
  }
  uint32_t local_of_rank0 = 0;
  const bool master =
      spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, uint32_t{0}, &local_of_rank0) == ESPANK_SUCCESS;
  uint32_t nnodes = 1;
  spank_get_item(sp, S_JOB_NNODES, &nnodes);
  if (master) return master_node_port(sp, st, id, nnodes <= 1);
  auto answer = exchange(sp, st.site, std::nullopt);
  if (!answer)
    return make_error(answer.error().code,
                      "MASTER_PORT: no answer from the master node through the "
                      "step's daemon (waiting at most port_wait=" +
                          std::to_string(st.site.port_wait_s) +
                          " s): " + sanitize(answer.error().message));
  auto port = parse_port_answer(*answer);
  DP_TRY(port);
  return std::to_string(*port);
}

bool is_special_step(uint32_t step_id) {
  return step_id == SLURM_BATCH_SCRIPT || step_id == SLURM_EXTERN_CONT ||
         step_id == SLURM_INTERACTIVE_STEP || step_id == SLURM_PENDING_STEP;
}

// The step's set-up on this node; an error fails every task of the node.
Result<void> set_up_node(spank_t sp, PluginState& st, const StepIds& id) {
  if (st.option_error)
    return make_error(Errc::invalid_argument, "srun passed an invalid --dp-* value to the node");
  // srun writes its step's ids; others (an enclosing step's, or the
  // user's own) mean srun did not prepare this step. Only checked, never
  // acted upon.
  if (job_env(sp, env::kJobId) != std::to_string(id.job) ||
      job_env(sp, env::kStepId) != std::to_string(id.step))
    return make_error(Errc::internal,
                      "srun did not prepare this step for slurm-dp (DP_JOB_ID/DP_STEP_ID "
                      "name another step): is spank_dp.so in srun's plugstack.conf too?");
  auto port = settle_master_port(sp, st, id);
  DP_TRY(port);
  if (spank_setenv(sp, env::kMasterPort, port->c_str(), 1) != ESPANK_SUCCESS)
    return make_error(Errc::internal, "cannot set MASTER_PORT for the tasks");
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
  st.node_cuda = job_env(sp, "CUDA_VISIBLE_DEVICES");
  st.node_ze = job_env(sp, "ZE_AFFINITY_MASK");
  slurm_debug("slurm-dp: step %s node devices cuda=%s ze=%s", id.text().c_str(),
              st.node_cuda ? sanitize(*st.node_cuda).c_str() : "-",
              st.node_ze ? sanitize(*st.node_ze).c_str() : "-");
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
  // forked; rank 0 re-checks it before exec.
  state().lease.drop_hold();
  return 0;
}

int stepd_task_init(spank_t sp) {
  PluginState& st = state();
  if (!st.active) return 0;
  uint32_t rank = 0, local_count = 0, node_id = 0, total = 0;
  int local_rank = 0;
  if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_ID, &local_rank) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_count) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &total) != ESPANK_SUCCESS) {
    report_error("cannot read this task's place from slurmstepd");
    return -1;
  }
  if (!st.setup_error.empty()) {
    report_error(st.setup_error);  // the task's stderr: srun shows it
    return -1;
  }
  // The leased port was ours until the tasks were forked; a process that
  // took it since would answer rank 0's peers in its place.
  if (rank == 0 && st.leased_port > 0 && !port_binds(st.leased_port)) {
    report_error(
        "MASTER_PORT " + std::to_string(st.leased_port) + " on node " + node_name() +
        " was taken by another process after slurm-dp leased it; start the step again, and "
        "ask the site for Slurm-reserved ports (MpiParams=ports=, srun --resv-ports)");
    return -1;
  }
  StepPlan plan;
  plan.world_size = static_cast<int>(total);
  if (auto tiles = job_env(sp, env::kTilesPerTask)) {
    auto k = parse_integer(*tiles, 1, 4096, env::kTilesPerTask, "1");
    if (!k) {
      report_error(describe(k.error()));
      return -1;
    }
    plan.tiles_per_task = static_cast<int>(*k);
  }
  VisibleDevices visible{job_env(sp, "CUDA_VISIBLE_DEVICES"), job_env(sp, "ZE_AFFINITY_MASK")};
  auto tiles = node_tiles(st.site, visible);
  if (!tiles) {
    report_error(tiles.error().message);
    return -1;
  }
  const auto& mine = st.site.kind == AcceleratorKind::ze ? visible.ze : visible.cuda;
  const auto& node = st.site.kind == AcceleratorKind::ze ? st.node_ze : st.node_cuda;
  tiles->per_task = mine.has_value() && node.has_value() && *mine != *node;
  TaskPlace place{static_cast<int>(rank), local_rank, static_cast<int>(local_count),
                  static_cast<int>(node_id)};
  auto vars = task_environment(plan, st.site, place, *tiles);
  if (!vars) {
    report_error(vars.error().message + " (node " + node_name() + ")");
    return -1;
  }
  for (const auto& [name, value] : *vars)
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
      report_error("cannot set " + name + " for task " + std::to_string(rank));
      return -1;
    }
  return 0;
}

int stepd_exit(spank_t) {
  state().lease.release();
  return 0;
}

}  // namespace dp::spank
