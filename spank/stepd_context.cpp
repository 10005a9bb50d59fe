// slurmstepd (S_CTX_REMOTE): on every node of a slurm-dp step, settle
// MASTER_PORT (once per node, as root, before tasks fork) and give each
// task its ranks and accelerator mask (in the task, just before exec).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "contexts.hpp"
#include "dp/env_names.hpp"
#include "dp/layout.hpp"
#include "dp/master_port.hpp"
#include "dp/options.hpp"
#include "rendezvous_client.hpp"
#include "plugin_state.hpp"
#include "port_lease.hpp"

namespace dp::spank {

namespace {

constexpr const char* kMasterPortKey = "dp/master_port";

std::optional<std::string> job_env(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return std::nullopt;
  return std::string(buf);
}

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME")) return n;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

Result<std::unique_ptr<RendezvousClient>> connect_agent(spank_t sp, const SiteConfig& site) {
  auto addr = job_env(sp, env::kRdvAddr);
  auto secret = job_env(sp, env::kRdvSecret);
  if (!addr || !secret)
    return make_error(Errc::internal, "the step has no rendezvous address; srun did not start it");
  ClientOptions o;
  DP_TRY(RendezvousClient::parse_address(*addr, o));
  o.secret = *secret;
  o.role = PeerRole::agent;
  o.hostname = node_name();
  o.connect_timeout = std::chrono::seconds(site.port_wait_s);
  o.call_timeout = std::chrono::seconds(site.port_wait_s);
  return RendezvousClient::connect(o);
}

// MASTER_PORT for this node's tasks: Slurm's reservation, else a leased
// port on the master node, shared with the other nodes through the daemon.
Result<std::string> settle_master_port(spank_t sp, PluginState& st, uint32_t job_id, uint32_t step_id) {
  if (auto fixed = job_env(sp, env::kMasterPort)) return *fixed;  // --dp-master-port=N
  auto resv = st.site.use_resv_ports ? job_env(sp, "SLURM_STEP_RESV_PORTS") : std::nullopt;
  if (resv) {
    auto first = first_reserved_port(*resv);
    DP_TRY(first);
    if (first->has_value()) return std::to_string(**first);
  }
  uint32_t local_of_rank0 = 0;
  const bool master = spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, uint32_t{0}, &local_of_rank0) ==
                      ESPANK_SUCCESS;
  uint32_t nnodes = 1;
  spank_get_item(sp, S_JOB_NNODES, &nnodes);
  if (master) {
    const uint64_t seed = (static_cast<uint64_t>(job_id) << 16) ^ step_id;
    auto lease = lease_master_port(st.site, seed,
                                   std::to_string(job_id) + "." + std::to_string(step_id));
    DP_TRY(lease);
    st.lease_path = lease->path;
    const std::string port = std::to_string(lease->port);
    if (nnodes > 1) {
      auto client = connect_agent(sp, st.site);
      DP_TRY(client);
      DP_TRY((*client)->set(kMasterPortKey, port));
      (void)(*client)->goodbye();
    }
    return port;
  }
  auto client = connect_agent(sp, st.site);
  DP_TRY(client);
  auto port = (*client)->get(kMasterPortKey, std::chrono::seconds(st.site.port_wait_s));
  (void)(*client)->goodbye();
  if (!port)
    return make_error(port.error().code, "MASTER_PORT: no answer from the master node within " +
                                             std::to_string(st.site.port_wait_s) +
                                             " s (port_wait=): " + port.error().message);
  return *port;
}

bool is_special_step(uint32_t step_id) {
  return step_id == SLURM_BATCH_SCRIPT || step_id == SLURM_EXTERN_CONT ||
         step_id == SLURM_INTERACTIVE_STEP || step_id == SLURM_PENDING_STEP;
}

}  // namespace

int stepd_init_post_opt(spank_t sp) {
  PluginState& st = state();
  uint32_t job_id = 0, step_id = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS || is_special_step(step_id))
    return 0;
  // srun marks a slurm-dp step with its own ids; variables inherited from
  // an enclosing step carry other ids and are ignored.
  auto marked_job = job_env(sp, env::kJobId);
  auto marked_step = job_env(sp, env::kStepId);
  if (!marked_job || !marked_step || *marked_job != std::to_string(job_id) ||
      *marked_step != std::to_string(step_id))
    return 0;
  st.active = true;
  st.node_cuda = job_env(sp, "CUDA_VISIBLE_DEVICES");
  st.node_ze = job_env(sp, "ZE_AFFINITY_MASK");
  slurm_debug("slurm-dp: step %u.%u node devices cuda=%s ze=%s", job_id, step_id,
             st.node_cuda ? st.node_cuda->c_str() : "-", st.node_ze ? st.node_ze->c_str() : "-");
  auto port = settle_master_port(sp, st, job_id, step_id);
  if (!port) {
    slurm_error("slurm-dp: step %u.%u: %s", job_id, step_id, port.error().message.c_str());
    return -1;
  }
  if (spank_setenv(sp, env::kMasterPort, port->c_str(), 1) != ESPANK_SUCCESS) return -1;
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
  PluginState& st = state();
  release_port_lease(st.lease_path);
  st.lease_path.clear();
  return 0;
}

}  // namespace dp::spank
