// srun (S_CTX_LOCAL): after the step exists and before any task starts,
// check the request against the step, start the step's rendezvous daemon,
// and put the step-wide variables in the tasks' environment.
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "contexts.hpp"
#include "daemon_launcher.hpp"
#include "dp/env_names.hpp"
#include "dp/layout.hpp"
#include "job_options.hpp"
#include "plugin_state.hpp"
#include "route_address.hpp"  // dp_client
#include "slurm_step.hpp"

#ifndef DP_DEFAULT_DAEMON_PATH
#error "DP_DEFAULT_DAEMON_PATH must name the installed dp-rendezvousd"
#endif

namespace dp::spank {

namespace {

// Tiles each node offers for the site's kind, from the site's declaration
// or the node's configured gres; -1 when not knowable before launch.
int tiles_of_node(const SiteConfig& site, const NodeFacts& node) {
  if (site.declared_tiles_per_node() > 0) return site.declared_tiles_per_node();
  switch (site.kind) {
    case AcceleratorKind::cuda: return gres_count(node.gres, "gpu");
    case AcceleratorKind::ze: return gres_count(node.gres, "gpu") * site.tiles_per_device;
    default: return 0;
  }
}

void print_explain(const StepPlan& plan, const SiteConfig& site, const StepShape& shape,
                   const std::map<std::string, NodeFacts>& nodes, const std::string& master_addr,
                   const Options& opts) {
  std::vector<NodeTiles> tiles;
  for (const auto& h : shape.hosts) {
    SiteConfig as_node = site;
    auto it = nodes.find(h);
    if (site.declared_tiles_per_node() == 0 && it != nodes.end())
      as_node.devices_per_node = gres_count(it->second.gres, "gpu");
    auto t = node_tiles(as_node, {});
    tiles.push_back(t ? *t : NodeTiles{});
  }
  const std::string port = opts.master_port.value_or(0) > 0
                               ? std::to_string(*opts.master_port)
                               : "auto(chosen-on-" + shape.hosts[static_cast<size_t>(shape.host_of(0))] + ")";
  auto tasks = step_environment(plan, site, shape, tiles, master_addr, port);
  if (!tasks) {
    std::cout << "slurm-dp: " << tasks.error().message << "\n";
    return;
  }
  std::cout << "slurm-dp: step of " << plan.world_size << " tasks on " << shape.hosts.size()
            << " nodes, kind=" << accelerator_kind_name(site.kind)
            << " (masks from the devices Slurm gives each node at launch)\n";
  for (const auto& line : explain_lines(*tasks)) std::cout << line << "\n";
  std::cout.flush();
}

int fail(const Error& e) {
  report_error(describe(e));
  return -1;
}

}  // namespace

int srun_local_user_init(spank_t sp) {
  PluginState& st = state();
  if (st.option_error) return -1;
  auto job_opts = options_from_environment();
  if (!job_opts) return fail(job_opts.error());
  const Options opts = overlay(*job_opts, st.cli_options);
  // A step that did not ask for slurm-dp is left exactly as it was.
  if (!opts.any() && !st.site.default_on) return 0;

  if (std::getenv("SLURM_HET_SIZE") != nullptr)
    return fail(make_error(Errc::invalid_argument,
                           "--dp-*: heterogeneous jobs are not supported; submit the "
                           "data-parallel step as an ordinary (single-component) job"));
  uint32_t job_id = 0, step_id = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS)
    return fail(make_error(Errc::internal, "cannot read the job and step ids from srun"));

  uint32_t total_tasks = 0;
  if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &total_tasks) != ESPANK_SUCCESS)
    return fail(make_error(Errc::internal, "cannot read the step's task count from srun"));

  // The daemon starts (exec, bind) while the layout is fetched and checked:
  // that overlap is most of srun's extra cost.
  const bool explain = opts.explain.value_or(false);
  auto secret = make_secret();
  if (!secret) return fail(secret.error());
  const char* debug = std::getenv(env::kDebug);
  DaemonRequest req;
  req.path = st.site.daemon_path.empty() ? DP_DEFAULT_DAEMON_PATH : st.site.daemon_path;
  req.world_size = static_cast<int>(total_tasks);
  req.job_id = job_id;
  req.step_id = step_id;
  req.idle_timeout_s = st.site.idle_timeout_s;
  req.show_stderr = opts.verbose.value_or(false) || (debug && std::string(debug) == "1");
  std::optional<StartingDaemon> starting;
  if (!explain) {
    auto s = start_daemon(req, *secret);
    if (!s) return fail(s.error());
    starting = *s;
  }
  auto refuse = [&](const Error& e) {
    if (starting) abandon_daemon(*starting);
    return fail(e);
  };

  auto shape = load_step_shape(job_id, step_id);
  if (!shape) return refuse(shape.error());
  const int master_index = shape->host_of(0);
  if (master_index < 0) return refuse(make_error(Errc::internal, "no node holds task 0"));
  const std::string& master_host = shape->hosts[static_cast<size_t>(master_index)];

  const bool need_all_nodes = opts.tiles.has_value() || explain;
  auto nodes = load_nodes(need_all_nodes ? shape->hosts : std::vector<std::string>{master_host});
  if (!nodes) return refuse(nodes.error());
  std::vector<int> node_tile_counts;
  for (const auto& h : shape->hosts) {
    auto it = nodes->find(h);
    node_tile_counts.push_back(it == nodes->end() ? -1 : tiles_of_node(st.site, it->second));
  }
  auto plan = plan_step(opts, st.site, *shape, node_tile_counts);
  if (!plan) return refuse(plan.error());
  if (plan->world_size != req.world_size)
    return refuse(make_error(Errc::internal, "srun and slurmctld disagree on the step's task count"));
  const std::string master_addr = nodes->at(master_host).address;

  if (explain) {
    print_explain(*plan, st.site, *shape, *nodes, master_addr, opts);
    return fail(make_error(Errc::ok, "--dp-explain: dry run; the layout is above and no task "
                                     "was started (srun exits non-zero by design)"));
  }

  auto route = net::local_address_towards(master_addr);
  if (!route) return refuse(make_error(route.error().code,
                                       "no route from this host to the master node: " + route.error().message));
  if (route->find(':') != std::string::npos) *route = "[" + *route + "]";  // IPv6 in "addr:port"
  auto daemon = await_daemon(*starting, req.ready_timeout_ms);
  if (!daemon) return fail(daemon.error());
  st.daemon_pid = daemon->pid;

  // srun's own environment is what it sends to the tasks.
  const std::string rdv = *route + ":" + std::to_string(daemon->port);
  setenv(env::kRdvAddr, rdv.c_str(), 1);
  setenv(env::kRdvSecret, secret->c_str(), 1);
  setenv(env::kJobId, std::to_string(job_id).c_str(), 1);
  setenv(env::kStepId, std::to_string(step_id).c_str(), 1);
  setenv(env::kWorldSize, std::to_string(plan->world_size).c_str(), 1);
  setenv(env::kMasterAddr, master_addr.c_str(), 1);
  // Set only when fixed here; otherwise the master node chooses it. A value
  // inherited from the user's shell must not pass for our choice.
  if (opts.master_port.value_or(0) > 0)
    setenv(env::kMasterPort, std::to_string(*opts.master_port).c_str(), 1);
  else
    unsetenv(env::kMasterPort);
  if (plan->tiles_per_task > 0)
    setenv(env::kTilesPerTask, std::to_string(plan->tiles_per_task).c_str(), 1);
  else
    unsetenv(env::kTilesPerTask);

  if (opts.verbose.value_or(false))
    std::cerr << "slurm-dp: step " << job_id << "." << step_id << ": world " << plan->world_size
              << " on " << shape->hosts.size() << " nodes, MASTER_ADDR=" << master_addr
              << ", rendezvous " << rdv << " (pid " << daemon->pid << ")" << std::endl;
  return 0;
}

int srun_exit(spank_t) {
  PluginState& st = state();
  if (st.daemon_pid > 0) {
    stop_daemon(st.daemon_pid);
    st.daemon_pid = -1;
  }
  return 0;
}

}  // namespace dp::spank
