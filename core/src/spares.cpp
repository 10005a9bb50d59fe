#include "dp/spares.hpp"

#include <algorithm>
#include <cstdio>

#include "dp/env_names.hpp"

namespace dp {

Result<std::optional<RestartShape>> restart_shape(const Options& o, const SiteConfig& site,
                                                  const RestartAsk& ask) {
  if (!o.restarts_programs()) return std::optional<RestartShape>{};
  const int k = o.spares.value_or(0);
  const std::string opt = k > 0 ? "--dp-spares=" + std::to_string(k)
                                : "--dp-max-restarts=" + std::to_string(*o.max_restarts);
  const bool launcher = !ask.launcher.empty();
  if (launcher && o.max_restarts)
    return make_error(Errc::invalid_argument,
                      opt + ": " + ask.launcher +
                          " restarts its own workers; use its --max-restarts instead of "
                          "--dp-max-restarts (--dp-spares still gives it spare nodes)");
  if (k > site.max_spares)
    return make_error(Errc::invalid_argument,
                      site.max_spares == 0
                          ? opt +
                                ": this site keeps no spare nodes (site key max_spares=0); "
                                "drop --dp-spares"
                          : opt + ": this site allows at most " + std::to_string(site.max_spares) +
                                " spare nodes per step (site key max_spares); use fewer");
  if (k >= ask.nodes)
    return make_error(Errc::invalid_argument,
                      opt + ": the step has " + std::to_string(ask.nodes) +
                          " node(s) and at least one must hold ranks; ask Slurm for -N " +
                          std::to_string(k + 1) + " or more (the spares are nodes of the step)");
  bool even = ask.tasks > 0 && ask.tasks % ask.nodes == 0;
  for (int n : ask.tasks_by_node) even = even && n * ask.nodes == ask.tasks;
  if (!even)
    return make_error(Errc::invalid_argument,
                      opt +
                          ": every node must run as many tasks (a spare takes a lost node's "
                          "whole place), but this step puts " +
                          std::to_string(ask.tasks) + " tasks on " + std::to_string(ask.nodes) +
                          " nodes unevenly; use --ntasks-per-node=T");
  RestartShape s;
  s.spares = k;
  s.tasks_per_node = ask.tasks / ask.nodes;
  s.keepers = !launcher;
  // Every launcher runs (torchrun's rendezvous keeps K of them waiting): the
  // world of slurm-dp's tasks is all of them.
  s.world_size = launcher ? ask.tasks : (ask.nodes - k) * s.tasks_per_node;
  s.max_restarts = launcher ? k : o.restart_budget(site.max_restarts);
  return std::optional<RestartShape>{s};
}

int Roster::spares_left() const noexcept {
  return static_cast<int>(std::count(node_rank.begin(), node_rank.end(), kSpare));
}

int Roster::lost() const noexcept {
  return static_cast<int>(std::count(node_rank.begin(), node_rank.end(), kLost));
}

int Roster::node_holding(int rank) const noexcept {
  if (rank < 0) return -1;
  for (size_t i = 0; i < node_rank.size(); ++i)
    if (node_rank[i] == rank) return static_cast<int>(i);
  return -1;
}

Roster initial_roster(int nodes, int spares, int tasks_per_node, int max_restarts) {
  Roster r;
  r.tasks_per_node = tasks_per_node;
  r.max_restarts = max_restarts;
  const int active = std::max(nodes - spares, 0);
  for (int i = 0; i < nodes; ++i) r.node_rank.push_back(i < active ? i : Roster::kSpare);
  return r;
}

namespace {

std::string budget_text(const Roster& r) {
  return "the step restarted " + std::to_string(r.restarts) + " time(s), its budget (" +
         "--dp-max-restarts=" + std::to_string(r.max_restarts) +
         "); a larger --dp-max-restarts allows more";
}

// The lowest live spare takes `node_rank`; false when none is left.
bool take_spare(RestartPlan& p, int node_rank) {
  Roster& r = p.roster;
  for (size_t i = 0; i < r.node_rank.size(); ++i) {
    if (r.node_rank[i] != Roster::kSpare) continue;
    r.node_rank[i] = node_rank;
    p.spare = static_cast<int>(i);
    p.node_rank = node_rank;
    return true;
  }
  return false;
}

RestartPlan lose_node(const Roster& r, int node, bool counts) {
  RestartPlan p;
  p.roster = r;
  const int held = r.node_rank[static_cast<size_t>(node)];
  p.roster.node_rank[static_cast<size_t>(node)] = Roster::kLost;
  if (held < 0) {  // a spare (or a node lost before): no program ran there
    p.verdict = RestartPlan::Verdict::none;
    return p;
  }
  if (counts && r.restarts >= r.max_restarts) {
    p.why = budget_text(r);
    return p;
  }
  if (!take_spare(p, held)) {
    p.why = "no spare node is left to take its place (" + std::to_string(r.lost() + 1) +
            " node(s) lost; the step has no more spares: a larger --dp-spares keeps more)";
    return p;
  }
  if (counts) ++p.roster.restarts;
  p.verdict = RestartPlan::Verdict::restart;
  return p;
}

}  // namespace

RestartPlan plan_restart(const Roster& r, Setback what, int node) {
  if (node < 0 || node >= r.nodes()) {
    RestartPlan p;
    p.roster = r;
    p.why = "node index " + std::to_string(node) + " is not one of the step's " +
            std::to_string(r.nodes()) + " nodes";
    return p;
  }
  if (what == Setback::node_lost) return lose_node(r, node, true);
  RestartPlan p;
  p.roster = r;
  if (r.node_rank[static_cast<size_t>(node)] < 0) {
    p.verdict = RestartPlan::Verdict::none;
    return p;
  }
  if (r.restarts >= r.max_restarts) {
    p.why = budget_text(r);
    return p;
  }
  ++p.roster.restarts;
  p.verdict = RestartPlan::Verdict::restart;
  return p;
}

Setback failure_setback(const Roster& r, int& early, bool at_once) {
  if (!at_once) {
    early = 0;
    return Setback::program_failed;
  }
  if (++early < kFailuresToRetire || r.spares_left() == 0) return Setback::program_failed;
  early = 0;
  return Setback::node_lost;
}

RestartPlan plan_further_loss(const Roster& r, int node) {
  if (node < 0 || node >= r.nodes()) {
    RestartPlan p;
    p.roster = r;
    p.verdict = RestartPlan::Verdict::none;
    return p;
  }
  return lose_node(r, node, false);
}

RestartPlan plan_launcher_loss(const Roster& r, int node, int spares) {
  RestartPlan p;
  p.roster = r;
  if (node < 0 || node >= r.nodes() || r.node_rank[static_cast<size_t>(node)] == Roster::kLost) {
    p.verdict = RestartPlan::Verdict::none;
    return p;
  }
  p.roster.node_rank[static_cast<size_t>(node)] = Roster::kLost;
  if (p.roster.lost() > spares) {
    p.why = "no spare node is left to take its place (" + std::to_string(p.roster.lost()) +
            " node(s) lost, " + std::to_string(spares) +
            " waiting in torchrun's rendezvous: a larger --dp-spares keeps more)";
    return p;
  }
  ++p.roster.restarts;
  p.verdict = RestartPlan::Verdict::restart;
  return p;
}

std::vector<int> node_rank_ranks(int node_rank, int tasks_per_node) {
  std::vector<int> out;
  if (node_rank < 0) return out;
  for (int i = 0; i < tasks_per_node; ++i) out.push_back(node_rank * tasks_per_node + i);
  return out;
}

TaskPlace acting_place(int node_rank, int local_rank, int tasks_per_node) {
  return TaskPlace{node_rank * tasks_per_node + local_rank, local_rank, tasks_per_node, node_rank};
}

EnvList restart_environment(int count) {
  return {{env::kTorchelasticRestartCount, std::to_string(count)},
          {env::kRestartCount, std::to_string(count)}};
}

const char* restart_phase_name(RestartPhase p) noexcept {
  switch (p) {
    case RestartPhase::detect: return "detect";
    case RestartPhase::stop: return "stop";
    case RestartPhase::relaunch: return "relaunch";
    case RestartPhase::rendezvous: return "rendezvous";
    case RestartPhase::first_step: return "first step";
  }
  return "?";
}

namespace {
std::string ms_as_seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}
}  // namespace

std::string restart_line(const RestartRecord& r) {
  std::string line =
      "restart " + std::to_string(r.count) + " of " + std::to_string(r.max_restarts) + ": ";
  line += r.lost_host.empty() ? "in place" : "node " + r.lost_host + " lost";
  if (!r.why.empty()) line += " (" + r.why + ")";
  if (r.by_launcher)
    line += "; a launcher waiting in torchrun's rendezvous takes its place, " +
            std::to_string(r.spares_left) + " spare(s) left";
  if (!r.spare_host.empty()) {
    const auto ranks = node_rank_ranks(r.node_rank, r.tasks_per_node);
    line += "; spare " + r.spare_host + " takes node rank " + std::to_string(r.node_rank);
    if (!ranks.empty())
      line += " (ranks " + std::to_string(ranks.front()) +
              (ranks.size() > 1 ? "-" + std::to_string(ranks.back()) : "") + ")";
    line += ", " + std::to_string(r.spares_left) + " spare(s) left";
  }
  std::string phases;
  for (int i = 0; i < kRestartPhases; ++i) {
    if (r.phase_ms[i] < 0) continue;
    phases += (phases.empty() ? "" : ", ") +
              std::string(restart_phase_name(static_cast<RestartPhase>(i))) + " " +
              ms_as_seconds(r.phase_ms[i]);
  }
  if (!phases.empty()) line += "; " + phases;
  return line;
}

}  // namespace dp
