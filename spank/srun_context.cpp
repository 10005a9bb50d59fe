// srun (S_CTX_LOCAL): after the step exists and before any task starts,
// check the request against the step, start the step's rendezvous daemon,
// and put the step-wide variables in the tasks' environment.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "contexts.hpp"
#include "daemon_launcher.hpp"
#include "dp/daemon_ports.hpp"
#include "dp/env_names.hpp"
#include "dp/layout.hpp"
#include "dp/params.hpp"
#include "dp/spares.hpp"
#include "dp/step_ports.hpp"
#include "job_options.hpp"
#include "plugin_state.hpp"
#include "route_address.hpp"  // dp_client
#include "skipped_step.hpp"
#include "slurm_headers.hpp"
#include "slurm_step.hpp"
#include "srun_no_kill.hpp"
#include "step_end.hpp"

namespace dp::spank {

namespace {

// What srun holds for its step between Slurm's callbacks.
struct SrunState {
  pid_t daemon_pid = -1;
  // (job, step) srun explained or refused; in an allocation it already had,
  // where the job's next step needs the CPUs, srun waits for the step's end.
  std::optional<std::pair<uint32_t, uint32_t>> skipped;
  bool in_allocation = false;
  StepEndFacts end;  // for the step's end (step_end.cpp)
};

SrunState& srun() {
  static SrunState s;
  return s;
}

bool print_explain(const LayoutPlan& plan, const SiteConfig& site, const StepShape& shape,
                   const std::string& master_addr, const Options& opts) {
  const std::string port =
      opts.master_port.value_or(0) > 0
          ? std::to_string(*opts.master_port)
          : "auto(chosen-on-" + shape.hosts[static_cast<size_t>(shape.host_of(0))] + ")";
  const std::string& first = shape.hosts[static_cast<size_t>(shape.host_of(0))];
  const std::string ports = plan.dp_port_count > 0 ? "auto(" + std::to_string(plan.dp_port_count) +
                                                         "-ports-chosen-on-" + first + ")"
                                                   : "";
  auto tasks = step_environment(plan, site, shape, master_addr, port, ports);
  if (!tasks) {
    std::cout << "slurm-dp: " << tasks.error().message << std::endl;
    return false;
  }
  std::cout << "slurm-dp: step of " << plan.world_size << " tasks on " << shape.hosts.size()
            << " nodes, kind=" << accelerator_kind_name(site.kind)
            << " (masks from the devices Slurm gives each node at launch)\n";
  if (!plan.launch.launcher.empty())
    std::cout << "slurm-dp: per-node launcher " << plan.launch.launcher << ": one per node, "
              << plan.launch.nodes << " nodes; PET_* settings give it the node count, its node "
              << "rank, the master and the workers per node (its own flags win)\n";
  else if (plan.launch.per_node)
    std::cout << "slurm-dp: one task per node: each also gets torchrun's PET_* settings, should "
              << "it start a per-node launcher\n";
  std::cout << "slurm-dp: " << store_line(plan.store) << "\n";
  if (!plan.device_hint.empty()) std::cout << "slurm-dp: hint: " << plan.device_hint << "\n";
  if (plan.restarts || plan.spares > 0)
    std::cout << "slurm-dp: restarts in place: " << plan.spares
              << " spare node(s) parked (the last " << plan.spares << "), at most "
              << plan.max_restarts
              << " restart(s) (a lost node replaced by a spare, or a failed program)\n";
  const bool step_store = plan.store == StoreKind::step;
  std::cout << "slurm-dp: ports on " << first << " (rank 0's node), held from set-up: " << port
            << " (" << (step_store ? "" : "MASTER_PORT, ") << "JAX_COORDINATOR_ADDRESS) "
            << port_hold_text(port_hold(StepPort::coordinator, opts, step_store));
  if (plan.dp_port_count > 0)
    std::cout << "; and " << plan.dp_port_count << " more (DP_PORTS"
              << (opts.passes_master_socket() ? ", listening: DP_PORTS_LISTEN_FDS" : "") << ") "
              << port_hold_text(port_hold(StepPort::dp_port, opts, step_store));
  std::cout << "\n";
  for (const auto& line : explain_lines(*tasks)) std::cout << line << "\n";
  std::cout.flush();
  return true;
}

// srun goes on to launch a step it explained or refused (skipped_step.hpp):
// every task ends before the program with `status`, srun exits with it, and
// the step ends on its nodes, giving its CPUs back to the job's next step.
int skip_step(spank_t sp, int status) {
  uint32_t job = 0, step = 0;
  spank_err_t rc{};  // ESPANK_SUCCESS until a call fails
  if ((rc = spank_get_item(sp, S_JOB_ID, &job)) != ESPANK_SUCCESS ||
      (rc = spank_get_item(sp, S_JOB_STEPID, &step)) != ESPANK_SUCCESS) {
    report_error("cannot read the step's ids from srun (" + spank_text(rc) +
                 "); the step ends with its job");
    return -1;
  }
  setenv(env::kSkipStep, format_skipped_step(job, step, status).c_str(), 1);
  srun().skipped = std::pair(job, step);
  return 0;
}

int refusal_status() { return srun_error_status(std::getenv("SLURM_EXIT_ERROR")); }

// srun learns that the tasks ended before slurmctld learns that the step did
// (each node's slurmstepd tells it after the last task): the job's next srun
// could find the nodes busy for a moment, or for about 5 s when a node's
// step-complete message missed its parent node's slurmstepd (Slurm then
// retries 5 times, a second apart, before telling slurmctld itself; seen on
// 24.11 when tasks end at once). Bounded: the step is Slurm's now.
// (An allocation srun made itself ends with srun; its steps stay listed
// while it completes, and no later step needs them.)
constexpr std::chrono::seconds kSkippedStepEndWait{10};  // Slurm's 5 retries, twice over
void await_skipped_step_end(uint32_t job, uint32_t step) {
  const auto deadline = std::chrono::steady_clock::now() + kSkippedStepEndWait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto listed = step_listed(job, step);
    if (!listed || !*listed) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A refusal: one "slurm-dp:" line, no task runs the program, and srun exits
// with the status it has when it cannot launch a step.
int fail(spank_t sp, const Error& e) {
  report_error(describe(e));
  return skip_step(sp, refusal_status());
}

struct StepIds {
  uint32_t job = 0, step = 0, tasks = 0;
  uint32_t nodes = 0;  // 0: srun did not say
};

Result<StepIds> step_ids(spank_t sp) {
  StepIds id;
  spank_err_t rc{};  // ESPANK_SUCCESS until a call fails
  if ((rc = spank_get_item(sp, S_JOB_ID, &id.job)) != ESPANK_SUCCESS ||
      (rc = spank_get_item(sp, S_JOB_STEPID, &id.step)) != ESPANK_SUCCESS)
    return make_error(Errc::internal,
                      "cannot read the job and step ids from srun: " + spank_text(rc));
  if ((rc = spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &id.tasks)) != ESPANK_SUCCESS)
    return make_error(Errc::internal,
                      "cannot read the step's task count from srun: " + spank_text(rc));
  // Known before launch: the daemon sizes its descriptors by node agents.
  if (spank_get_item(sp, S_JOB_NNODES, &id.nodes) != ESPANK_SUCCESS || id.nodes > id.tasks)
    id.nodes = 0;
  return id;
}

// The step's options (job values, then srun's, or the site's default=on);
// nullopt for a step that did not ask for slurm-dp.
Result<std::optional<Options>> resolve_step_options(const PluginState& st) {
  auto job_opts = options_from_environment();
  DP_TRY(job_opts);
  auto opts = resolve_options(*job_opts, st.cli_options, st.site.default_on);
  if (opts && std::getenv("SLURM_HET_SIZE") != nullptr)
    return make_error(Errc::invalid_argument,
                      "--dp-*: heterogeneous jobs are not supported; submit the "
                      "data-parallel step as an ordinary (single-component) job");
  return opts;
}

// What srun learns and checks about the step before any task starts.
struct CheckedStep {
  StepShape shape;
  LayoutPlan plan;
  std::string master_addr;
  std::vector<std::string> node_addrs;  // every node's NodeAddr, for the daemon's hello budget
};

// The facts the layout core decides from: the step's shape, each node's
// configured devices and (when it matters) the GPUs the step asked for.
Result<CheckedStep> check_step(const SiteConfig& site, const Options& opts, const StepIds& id,
                               const std::vector<std::string>& command) {
  StepFacts f;
  auto shape = load_step_shape(id.job, id.step);
  DP_TRY(shape);
  f.shape = std::move(*shape);
  const int master_index = f.shape.host_of(0);
  if (master_index < 0) return make_error(Errc::internal, "no node holds task 0");
  const std::string master_host = f.shape.hosts[static_cast<size_t>(master_index)];
  // Every node's: the daemon keeps a hello budget for each node's address.
  auto nodes = load_nodes(f.shape.hosts);
  DP_TRY(nodes);
  std::vector<std::string> node_addrs;
  for (const auto& h : f.shape.hosts) {
    auto it = nodes->find(h);
    f.nodes.push_back({it == nodes->end() ? std::nullopt : std::optional(it->second.gres), {}});
    if (it != nodes->end()) node_addrs.push_back(it->second.address);
  }
  // Without --dp-tiles only --dp-explain shows what the request changes, or
  // a site that confines tasks to their GPUs, where a hint may be due.
  f.devices_confined = devices_confined_here();
  const bool tiles_or_explain = opts.tiles.has_value() || opts.explain.value_or(false);
  if ((tiles_or_explain || f.devices_confined) && device_request_matters(opts, site, command)) {
    auto req = load_step_request(id.job, id.step);
    DP_TRY(req);
    f.request = *req;
  }
  f.options = opts;
  f.site = site;
  f.command = command;
  auto plan = plan_layout(f);
  DP_TRY(plan);
  const int parked = plan->restarts ? plan->spares * plan->tasks_per_node : 0;
  if (plan->world_size + parked != static_cast<int>(id.tasks))
    return make_error(Errc::internal, "srun and slurmctld disagree on the step's task count");
  return CheckedStep{std::move(f.shape), std::move(*plan), nodes->at(master_host).address,
                     std::move(node_addrs)};
}

// --dp-spares needs Slurm to keep the step's other nodes running when one is
// lost: the step's --no-kill, srun's own word. The job needs it too, which
// no client can read back from slurmctld (job_info_t has no kill_on_node_fail):
// an allocation srun makes takes srun's flag; sbatch's and salloc's is the
// user's to give (README.md, "Spare nodes").
Result<void> check_no_kill(const Options& opts, size_t command_words) {
  if (opts.spares.value_or(0) == 0 || opts.explain.value_or(false)) return {};
  if (srun_asks_no_kill(own_command_line(), command_words, std::getenv("SLURM_NO_KILL"))) return {};
  return make_error(Errc::invalid_argument,
                    "--dp-spares=" + std::to_string(*opts.spares) +
                        ": without srun --no-kill a lost node ends the step's tasks on every "
                        "node, so no spare could take its place; add --no-kill to srun (and to "
                        "sbatch or salloc for a job of its own), or ask the site for "
                        "spares_no_kill=set, which makes it srun's default with --dp-spares");
}

// A dry run: the layout is printed here and no task runs the program; srun
// exits 0 (after a layout it could not print, as after a refusal).
int explain_step(spank_t sp, const CheckedStep& c, const SiteConfig& site, const Options& opts) {
  const bool ok = print_explain(c.plan, site, c.shape, c.master_addr, opts);
  std::cout << "slurm-dp: --dp-explain: dry run; no task runs the program" << std::endl;
  // The nodes compute each task's mask from the devices Slurm gives them and
  // print it where Slurm does not number them from 0 (UUIDs): they need the
  // step's options for that.
  setenv(env::kOptions, format_node_options(opts).c_str(), 1);
  return skip_step(sp, ok ? 0 : refusal_status());
}

// srun's own environment is what it sends to the tasks.
void export_step_environment(const StepIds& id, const CheckedStep& c, const Options& opts,
                             const SiteConfig& site, const std::string& rdv,
                             const std::string& secret) {
  setenv(env::kRdvAddr, rdv.c_str(), 1);
  setenv(env::kRdvSecret, secret.c_str(), 1);
  setenv(env::kJobId, std::to_string(id.job).c_str(), 1);
  setenv(env::kStepId, std::to_string(id.step).c_str(), 1);
  setenv(env::kWorldSize, std::to_string(c.plan.world_size).c_str(), 1);
  setenv(env::kMasterAddr, c.master_addr.c_str(), 1);
  // Set only when fixed here; otherwise the master node chooses it. A value
  // inherited from the user's shell must not pass for our choice.
  if (opts.master_port.value_or(0) > 0)
    setenv(env::kMasterPort, std::to_string(*opts.master_port).c_str(), 1);
  else unsetenv(env::kMasterPort);
  // Set on the nodes, per step: a value from the user's shell is none of ours.
  for (const char* name : {env::kPorts, env::kPortsListenFds, env::kMasterListenFd}) unsetenv(name);
  // The one value of the step's options for the nodes and the tasks.
  setenv(env::kOptions, format_node_options(opts).c_str(), 1);
  // The ranks' watch on their agent (or daemon) has the site's one bound of
  // silence; a value the user set for the step wins.
  const std::string silence_ms = std::to_string(site.heartbeat_timeout_s * 1000LL);
  setenv(std::string(param_spec(Param::rdv_silence_ms).name).c_str(), silence_ms.c_str(), 0);
}

// The daemon's contract, filled from the step's options over the site's.
DaemonLaunch daemon_launch(const SiteConfig& site, const Options& opts, const StepIds& id,
                           const std::vector<std::string>& command) {
  DaemonLaunch d;
  d.path = daemon_path(site);
  dp::daemon::LaunchArgs& a = d.args;
  a.world_size = static_cast<int>(id.tasks);
  // Restarts in place: the shape the layout plans (a shape it refuses
  // abandons this daemon, and the layout's error reaches the user).
  const int nodes = static_cast<int>(id.nodes);
  const Launcher mode = opts.launcher.value_or(Launcher::auto_detect);
  const RestartAsk ask{static_cast<int>(id.tasks),
                       nodes,
                       {},
                       mode == Launcher::none       ? std::string()
                       : mode == Launcher::torchrun ? std::string("torchrun")
                                                    : launcher_in_command(command)};
  if (auto shape = restart_shape(opts, site, ask); shape && *shape) {
    a.world_size = (*shape)->world_size;
    a.tasks_per_node = (*shape)->tasks_per_node;
    a.spares = (*shape)->spares;
    a.max_restarts = (*shape)->max_restarts;
    a.restart_programs = (*shape)->keepers;
    a.restart_stop_ms = site.restart_stop_s() * 1000LL;
    a.spare_silence_ms = site.spare_timeout_s * 1000LL;
    a.fence_ms = site.fence_after_s * 1000LL;
  }
  a.nodes = nodes;
  a.job_id = std::to_string(id.job);
  a.step_id = std::to_string(id.step);
  a.heartbeat_timeout_ms = site.heartbeat_timeout_s * 1000LL;
  a.hang_timeout_ms = opts.hang_timeout_s.value_or(site.hang_timeout_s) * 1000LL;
  a.hang_timeout_by_user = opts.hang_timeout_s.has_value();
  a.on_failure = opts.on_failure.value_or(site.on_failure);
  a.end_on_hang = opts.end_on_hang.value_or(site.end_on_hang);
  a.straggler_pct = opts.straggler.value_or(site.straggler_on) ? site.straggler_pct : 0;
  const slurm::PortRange srun_ports = slurm::srun_port_range();
  a.listen_ports = daemon_listen_range(site, srun_ports.low, srun_ports.high);
  d.show_stderr = opts.verbose.value_or(false) || debug_enabled();
  return d;
}

// The daemon's address as the tasks reach it: srun's own address on the
// route to the master node.
Result<std::string> rendezvous_host(const std::string& master_addr) {
  auto route = net::local_address_towards(master_addr);
  if (!route)
    return wrap_error(route.error(),
                      "no route from this host to the master node: " + route.error().message);
  if (route->find(':') != std::string::npos) *route = "[" + *route + "]";  // IPv6 in "addr:port"
  return *route;
}

}  // namespace

int srun_init(spank_t) {
  // Before srun makes an allocation of its own (and sets SLURM_JOB_ID).
  srun().in_allocation = std::getenv("SLURM_JOB_ID") != nullptr;
  // The site's spares_no_kill: srun reads SLURM_NO_KILL after this callback
  // and before its options, so a step (and an allocation srun makes) that
  // asks for spares gets --no-kill unless the user said otherwise.
  const char* job_spares = std::getenv(("SLURM_SPANK_" + option_env_name("dp-spares")).c_str());
  if (state().site.spares_no_kill && std::getenv("SLURM_NO_KILL") == nullptr &&
      (job_spares != nullptr || words_ask_for_spares(own_command_line())))
    setenv("SLURM_NO_KILL", "set", 0);
  return 0;
}

// --dp-verbose: the step as srun started it.
void say_started(const StepIds& id, const CheckedStep& step, const std::string& rdv,
                 const DaemonLaunch& launch, const RunningDaemon& daemon) {
  std::cerr << "slurm-dp: step " << id.job << "." << id.step << ": world " << step.plan.world_size
            << " on " << step.shape.hosts.size() << " nodes, MASTER_ADDR=" << step.master_addr
            << ", rendezvous " << rdv << " (" << launch.args.listen_ports.text() << ", pid "
            << daemon.pid << ")" << std::endl;
}

int srun_local_user_init(spank_t sp) {
  const StepClock clock;  // srun's side of the start-up timings
  const PluginState& st = state();
  SrunState& sr = srun();
  if (st.option_error) return skip_step(sp, refusal_status());
  auto resolved = resolve_step_options(st);
  if (!resolved) return fail(sp, resolved.error());
  // A step that did not ask for slurm-dp is left exactly as it was.
  if (!*resolved) return 0;
  // One of the user's shell or of an enclosing step is not this step's.
  unsetenv(env::kSkipStep);
  report_site_warnings(st.site);
  const Options& opts = **resolved;
  auto id = step_ids(sp);
  if (!id) return fail(sp, id.error());

  // The daemon starts (exec, bind) while the layout is fetched and checked:
  // that overlap is most of srun's extra cost.
  const bool explain = opts.explain.value_or(false);
  auto secret = make_secret();
  if (!secret) return fail(sp, secret.error());
  sr.end.srun_check_ms = clock.ms();
  const std::vector<std::string> command = task_command(sp);
  const DaemonLaunch launch = daemon_launch(st.site, opts, *id, command);
  std::optional<StartingDaemon> starting;
  if (!explain) {
    auto s = start_daemon(launch, *secret);
    if (!s) return fail(sp, s.error());
    starting = std::move(*s);
  }
  auto refuse = [&](const Error& e) {
    if (starting) abandon_daemon(*starting);
    return fail(sp, e);
  };

  if (auto kept = check_no_kill(opts, command.size()); !kept) return refuse(kept.error());
  auto step = check_step(st.site, opts, *id, command);
  if (!step) return refuse(step.error());
  if (explain) return explain_step(sp, *step, st.site, opts);
  sr.end.srun_layout_ms = clock.ms();
  if (!step->plan.device_hint.empty())
    std::cerr << "slurm-dp: hint: " << step->plan.device_hint << std::endl;
  auto host = rendezvous_host(step->master_addr);
  if (!host) return refuse(host.error());
  // The daemon listens only there, not on every address of srun's host.
  const bool v6 = host->size() > 2 && host->front() == '[';
  send_listen_address(*starting, v6 ? host->substr(1, host->size() - 2) : *host, step->node_addrs);
  auto daemon = await_daemon(*starting, launch.ready_timeout_ms);
  if (!daemon) return fail(sp, daemon.error());
  sr.daemon_pid = daemon->pid;
  sr.end.srun_daemon_ms = clock.ms();

  const std::string rdv = *host + ":" + std::to_string(daemon->port);
  export_step_environment(*id, *step, opts, st.site, rdv, *secret);
  remember_step(sr.end, id->job, id->step, opts, st.site.report, clock.ms());
  sr.end.report_socket = daemon->report_socket;
  sr.end.store = store_kind_name(step->plan.store);
  if (opts.verbose.value_or(false)) say_started(*id, *step, rdv, launch, *daemon);
  return 0;
}

int srun_exit(spank_t) {
  SrunState& sr = srun();
  if (sr.skipped && sr.in_allocation) await_skipped_step_end(sr.skipped->first, sr.skipped->second);
  if (sr.daemon_pid > 0) {
    report_step_end(sr.end);  // before the daemon goes: it holds the report
    stop_daemon(sr.daemon_pid);
    sr.daemon_pid = -1;
  }
  return 0;
}

}  // namespace dp::spank
