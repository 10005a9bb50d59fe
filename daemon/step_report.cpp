#include "step_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dp/step_signals.hpp"
#include "report_figure.hpp"

namespace dp::daemon {
namespace {

// Heartbeats come every second: a rank heard from within this is alive and
// not stopped (a suspended job sends none, so a hang is not suspected then).
constexpr auto kFresh = std::chrono::milliseconds(3'000);
// What a waiting rank may already have waited when a hang is first seen.
constexpr auto kMaxHeadStart = std::chrono::milliseconds(1'500);

std::string num(double v, const char* fmt = "%.1f") {
  char b[48];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

// A figure the step may not know yet: null until it does.
Json figure_or_null(bool known, double v, int places = 3) {
  return known ? Json(rounded(v, places)) : Json(nullptr);
}

double us_to_ms(uint64_t us) { return static_cast<double>(us) / 1000.0; }

}  // namespace

std::string hang_bound_text(std::chrono::milliseconds bound, bool by_user) {
  const std::string s = num(std::chrono::duration<double>(bound).count(), "%g");
  return by_user ? "--dp-hang-timeout=" + s + "s" : "the site's hang_timeout=" + s + " s";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) s += ",... (" + std::to_string(ranks.size()) + " ranks)";
  return s;
}

StepReport::StepReport(Clock::time_point start, std::string job, std::string step, int world_size,
                       std::chrono::milliseconds hang_timeout, bool hang_timeout_by_user)
    : start_(start),
      job_(std::move(job)),
      step_(std::move(step)),
      world_size_(world_size),
      hang_timeout_(hang_timeout),
      hang_timeout_by_user_(hang_timeout_by_user),
      ranks_(static_cast<size_t>(std::max(world_size, 0))) {}

double StepReport::since_start_ms(Clock::time_point t) const {
  return std::chrono::duration<double, std::milli>(t - start_).count();
}

std::string StepReport::rank_name(int rank) const {
  if (rank < 0 || rank >= world_size_) return "an agent";
  const auto& h = ranks_[static_cast<size_t>(rank)].host;
  return "rank " + std::to_string(rank) + " (host " + (h.empty() ? "?" : h) + ")";
}

void StepReport::on_hello(int rank, const std::string& host, Clock::time_point now) {
  if (rank < 0 || rank >= world_size_) return;
  Rank& r = ranks_[static_cast<size_t>(rank)];
  r.host = host;
  if (!r.hello) r.hello_ms = since_start_ms(now);
  r.hello = true;
}

void StepReport::on_agent_set(Clock::time_point now) {
  if (agent_set_ms_ < 0) agent_set_ms_ = since_start_ms(now);
}

std::string StepReport::ports_text() const {
  if (!ports_) return "-";
  std::string t = std::to_string(ports_->coordinator) + " (coordinator)";
  if (!ports_->dp_ports.empty()) t += ", DP_PORTS " + dp::ports_text(ports_->dp_ports);
  return t;
}

void StepReport::on_progress(int rank, const proto::Progress& p, Clock::time_point now) {
  if (rank < 0 || rank >= world_size_) return;
  Rank& r = ranks_[static_cast<size_t>(rank)];
  r.p = p;
  r.p_at = now;
  r.has_progress = true;
  if (stragglers_) stragglers_->on_counters(rank, r.host, p);
}

void StepReport::watch_stragglers(straggler::Settings s, long ticks_per_second) {
  stragglers_.emplace(s, ticks_per_second, world_size_);
}

void StepReport::on_goodbye(int rank) {
  if (rank >= 0 && rank < world_size_) ranks_[static_cast<size_t>(rank)].goodbye = true;
}

void StepReport::on_restart() {
  for (Rank& r : ranks_) {
    r.goodbye = false;
    r.has_progress = false;
    r.p = proto::Progress();
  }
  hang_op_ = 0;
}

void StepReport::note_restarts(std::vector<std::string> lines, int spares_left) {
  restarts_ = std::move(lines);
  spares_left_ = spares_left;
}

StepReport::Resumed StepReport::resumed() const {
  Resumed out;
  out.initialized = out.stepped = !ranks_.empty();
  for (const Rank& r : ranks_) {
    out.reported = out.reported || r.has_progress;
    out.initialized = out.initialized && r.has_progress && r.p.init_total_us() > 0;
    out.stepped = out.stepped && r.has_progress && r.p.ops_done() > 0;
  }
  return out;
}

std::string StepReport::first_failure(int rank, const std::string& host, AbortCause::How how,
                                      const std::string& what, Clock::time_point now,
                                      const TaskExit& exit) {
  if (failure_) return failure_->message;
  FailureRecord f;
  f.rank = rank;
  f.host = host;
  f.how = how;
  f.exit = exit;
  f.at_s = since_start_ms(now) / 1000.0;
  std::string how_text = how_name(how);
  if (exit.worker_rank) how_text += ", worker rank " + std::to_string(*exit.worker_rank);
  if (exit.exit_code) how_text += ", exit code " + std::to_string(*exit.exit_code);
  if (exit.signal) how_text += ", signal " + std::to_string(*exit.signal);
  const int by = exit.user_signal.value_or(0);
  // One shape for every rank's error and srun's last line: who, how, when, then the detail.
  // A step the user ended did not fail: the headline says who ended it.
  const std::string head =
      how == AbortCause::How::user_signal ? user_signal_headline(by) + ": " : "first failure: ";
  f.message = head + what + " [" + how_text + ", " + num(f.at_s, "%.2f") +
              " s after the step's daemon started; verdict " + how_verdict(how, by) + "]";
  failure_ = f;
  return f.message;
}

bool StepReport::counts_collectives() const {
  return std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.has_progress; });
}

std::optional<HangVerdict> StepReport::check_hang(Clock::time_point now) {
  if (hang_timeout_.count() <= 0 || failure_ || world_size_ < 2) return std::nullopt;
  uint64_t top = 0;
  for (const Rank& r : ranks_) {
    // Every rank must be alive, counting, and recently heard from.
    if (!r.has_progress || r.goodbye || now - r.p_at > kFresh) {
      hang_op_ = 0;
      return std::nullopt;
    }
    top = std::max<uint64_t>(top, r.p.ops_started());
  }
  std::vector<int> waiting, missing;
  auto head_start = kMaxHeadStart;
  for (int i = 0; i < world_size_; ++i) {
    const Rank& r = ranks_[static_cast<size_t>(i)];
    if (r.p.ops_started() < top) {
      missing.push_back(i);
    } else if (r.p.in_op_us() > 0) {
      waiting.push_back(i);
      head_start = std::min(head_start, std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::microseconds(r.p.in_op_us())));
    }
  }
  if (missing.empty() || waiting.empty()) {
    hang_op_ = 0;
    return std::nullopt;
  }
  if (hang_op_ != top) {
    hang_op_ = top;
    hang_since_ = now - head_start;
  }
  const auto waited = now - hang_since_;
  if (waited < hang_timeout_) return std::nullopt;
  HangVerdict v;
  v.rank = missing.front();
  v.which = "collective #" + std::to_string(top);
  const Rank& m = ranks_[static_cast<size_t>(v.rank)];
  v.message = rank_name(v.rank) +
              " hangs: it is alive (its heartbeats arrive) but has not entered collective #" +
              std::to_string(top) + " (it is at #" + std::to_string(m.p.ops_started()) +
              ") that rank(s) " + rank_list(waiting) + " have waited in for " +
              num(std::chrono::duration<double>(waited).count()) + " s; the bound is " +
              hang_bound_text(hang_timeout_, hang_timeout_by_user_);
  if (missing.size() > 1) v.message += " (also not arrived: ranks " + rank_list(missing) + ")";
  return v;
}

bool StepReport::note_hang(const std::string& which, const std::string& message,
                           std::vector<std::string> view, Clock::time_point now) {
  if (hang_ && hang_->which == which) return false;
  const int count = hang_ ? hang_->count + 1 : 1;
  hang_ = HangRecord{since_start_ms(now) / 1000.0, count, which, message, std::move(view)};
  return true;
}

void StepReport::note_failure_stacks(std::vector<std::string> view) {
  if (failure_) failure_->stacks = std::move(view);
}

std::vector<std::string> StepReport::hang_lines() const {
  if (!hang_) return {};
  std::vector<std::string> lines{"hang at " + num(hang_->at_s, "%.1f") + " s: " + hang_->message};
  for (const auto& l : hang_->view) lines.push_back("  " + l);
  return lines;
}

Json StepReport::hang_json() const {
  if (!hang_) return nullptr;
  return Json{{"at_s", rounded(hang_->at_s)},
              {"count", hang_->count},
              {"message", hang_->message},
              {"stacks", hang_->view}};
}

double StepReport::wait_share(const Rank& r) const {
  if (!r.has_progress || r.p.since_first_op_us() == 0) return -1;
  return std::min(
      1.0, static_cast<double>(r.p.wait_us()) / static_cast<double>(r.p.since_first_op_us()));
}

std::vector<int> StepReport::straggler_order() const {
  std::vector<int> order;
  for (int i = 0; i < world_size_; ++i) {
    if (wait_share(ranks_[static_cast<size_t>(i)]) >= 0) order.push_back(i);
  }
  // The rank that waits least is the one the others wait for.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return wait_share(ranks_[static_cast<size_t>(a)]) < wait_share(ranks_[static_cast<size_t>(b)]);
  });
  return order;
}

StepReport::Slowest StepReport::slowest(double (*value)(const Rank&)) const {
  Slowest s;
  for (int i = 0; i < world_size_; ++i) {
    const double v = value(ranks_[static_cast<size_t>(i)]);
    if (v >= 0 && (s.rank < 0 || v > s.ms)) s = {i, v};
  }
  return s;
}

namespace {
double v_hello(const auto& r) { return r.hello ? r.hello_ms : -1; }
double v_connect(const auto& r) {
  return r.has_progress && r.p.init_connect_us() ? us_to_ms(r.p.init_connect_us()) : -1;
}
double v_setup(const auto& r) {
  return r.has_progress && r.p.init_total_us() > r.p.init_connect_us() && r.p.init_connect_us()
             ? us_to_ms(r.p.init_total_us() - r.p.init_connect_us())
             : -1;
}
double v_ready(const auto& r) {
  return r.has_progress && r.p.init_total_us() ? us_to_ms(r.p.init_total_us()) : -1;
}
double v_first(const auto& r) {
  return r.has_progress && r.p.first_op_done_us() ? us_to_ms(r.p.first_op_done_us()) : -1;
}
}  // namespace

// Each phase once: name, what it measures, and its slowest rank.
std::string StepReport::startup_line(const StartupPhases& phases) const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  auto daemon_phase = [&](const char* label, Phase p) {
    const auto ms = phases.at_ms(p);
    add(std::string(label) + " " + (ms ? "+" + num(*ms) + "ms" : std::string("-")));
  };
  auto rank_phase = [&](const char* label, const Slowest& sl, bool relative) {
    if (sl.rank < 0) {
      add(std::string(label) + " -");
      return;
    }
    const auto& h = ranks_[static_cast<size_t>(sl.rank)].host;
    add(std::string(label) + " " + (relative ? "+" : "") + num(sl.ms) + "ms (slowest rank " +
        std::to_string(sl.rank) + " on " + (h.empty() ? "?" : h) + ")");
  };
  rank_phase("launch+hello", slowest([](const Rank& r) { return v_hello(r); }), true);
  add(std::string("master_port ") + (agent_set_ms_ >= 0
                                         ? "+" + num(agent_set_ms_) + "ms"
                                         : std::string("none (fixed or reserved by Slurm)")));
  rank_phase("connect", slowest([](const Rank& r) { return v_connect(r); }), false);
  daemon_phase("id_exchange", Phase::id_fetched_by_all);
  // Gloo's full mesh is the start-up barrier of a gloo step (it asks the daemon
  // for none): each rank's set-up ends when the last peer has connected.
  if (phases.has(Phase::first_barrier)) daemon_phase("barrier", Phase::first_barrier);
  rank_phase(phases.has(Phase::first_barrier) ? "comm_setup" : "barrier(mesh)",
             slowest([](const Rank& r) { return v_setup(r); }), false);
  rank_phase("comm_ready", slowest([](const Rank& r) { return v_ready(r); }), false);
  rank_phase("first_collective", slowest([](const Rank& r) { return v_first(r); }), false);
  return s;
}

Json StepReport::startup_json(const StartupPhases& phases) const {
  Json daemon_ms = Json::object();
  for (int i = 0; i < kPhaseCount; ++i) {
    const auto ms = phases.at_ms(static_cast<Phase>(i));
    daemon_ms[phase_name(static_cast<Phase>(i))] = figure_or_null(ms.has_value(), ms.value_or(0));
  }
  daemon_ms["master_port"] = figure_or_null(agent_set_ms_ >= 0, agent_set_ms_);
  struct P {
    const char* name;
    Slowest s;
  };
  const P ps[] = {{"hello", slowest([](const Rank& r) { return v_hello(r); })},
                  {"connect", slowest([](const Rank& r) { return v_connect(r); })},
                  {"comm_setup", slowest([](const Rank& r) { return v_setup(r); })},
                  {"comm_ready", slowest([](const Rank& r) { return v_ready(r); })},
                  {"first_collective", slowest([](const Rank& r) { return v_first(r); })}};
  Json slowest_ranks = Json::object();
  for (const P& p : ps) {
    slowest_ranks[p.name] = p.s.rank < 0
                                ? Json(nullptr)
                                : Json{{"rank", p.s.rank},
                                       {"host", ranks_[static_cast<size_t>(p.s.rank)].host},
                                       {"ms", rounded(p.s.ms)}};
  }
  return Json{{"line", startup_line(phases)}, {"daemon_ms", daemon_ms}, {"slowest", slowest_ranks}};
}

Json StepReport::rank_json(int i, Clock::time_point now) const {
  const Rank& r = ranks_[static_cast<size_t>(i)];
  const double ws = wait_share(r);
  return Json{
      {"rank", i},
      {"host", r.host},
      {"state", rank_state(i)},
      {"ops_done", r.p.ops_done()},
      {"wait_share", figure_or_null(ws >= 0, ws, 4)},
      {"wait_s", rounded(static_cast<double>(r.p.wait_us()) / 1e6)},
      {"in_collective_s", rounded(static_cast<double>(r.p.in_op_us()) / 1e6)},
      {"hello_ms", figure_or_null(r.hello, r.hello_ms)},
      {"init_ms", figure_or_null(r.p.init_total_us() != 0, us_to_ms(r.p.init_total_us()))},
      {"last_heard_s",
       figure_or_null(r.has_progress, std::chrono::duration<double>(now - r.p_at).count())},
  };
}

Json StepReport::failure_json() const {
  if (!failure_) return nullptr;
  Json f{{"rank", failure_->rank},
         {"host", failure_->host},
         {"how", how_name(failure_->how)},
         {"verdict", how_verdict(failure_->how, failure_->exit.user_signal.value_or(0))}};
  if (failure_->exit.exit_code) f["exit_code"] = *failure_->exit.exit_code;
  if (failure_->exit.signal) f["signal"] = *failure_->exit.signal;
  if (failure_->exit.worker_rank) f["worker_rank"] = *failure_->exit.worker_rank;
  f["at_s"] = rounded(failure_->at_s);
  f["message"] = failure_->message;
  if (!failure_->stacks.empty()) f["stacks"] = failure_->stacks;
  return f;
}

std::string StepReport::json(const StartupPhases& phases, const DaemonCounters& c,
                             Clock::time_point now) const {
  Json ranks = Json::array();
  for (int i = 0; i < world_size_; ++i) ranks.push_back(rank_json(i, now));
  // Least waiting first: the head of the table is who the others wait for.
  Json stragglers = Json::array();
  for (int i : straggler_order()) stragglers.push_back(rank_json(i, now));
  const Json j{
      {"job", job_},
      {"step", step_},
      {"world_size", world_size_},
      {"elapsed_s", rounded(since_start_ms(now) / 1000.0)},
      {"hang_timeout_s", rounded(std::chrono::duration<double>(hang_timeout_).count())},
      {"startup", startup_json(phases)},
      {"ports", ports_ ? Json{{"coordinator", ports_->coordinator}, {"dp_ports", ports_->dp_ports}}
                       : Json(nullptr)},
      {"failure", failure_json()},
      {"hang", hang_json()},
      {"straggler", stragglers_ ? stragglers_->json(counts_collectives()) : Json(nullptr)},
      {"store_waits_unset", unset_waits()},
      {"store_refusals", store_refusals_},
      {"restarts", restarts_},
      {"spares_left", spares_left_ < 0 ? Json(nullptr) : Json(spares_left_)},
      {"ranks", std::move(ranks)},
      {"stragglers", std::move(stragglers)},
      {"daemon",
       {{"connections", c.connections},
        {"connections_accepted", c.connections_accepted},
        {"nodes_connected", c.nodes_connected},
        {"requests", c.requests},
        {"heartbeats", c.heartbeats},
        {"keys", c.keys},
        {"bytes_stored", c.bytes_stored},
        {"refused_unauthorized", c.refused_unauthorized},
        {"store_strangers_refused", c.store_strangers_refused},
        {"store_requests_refused", c.store_requests_refused},
        {"protocol_errors", c.protocol_errors},
        {"limit_errors", c.limit_errors}}},
  };
  // Hosts and messages are a peer's or the user's text: the library escapes
  // them, and bytes that are not UTF-8 are replaced, never thrown on.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {
constexpr size_t kMostLines = 8;  // of each kind: the report and srun's output stay short
}  // namespace

bool StepReport::note_unset_wait(const std::string& key, std::string line) {
  if (unset_keys_.size() >= kMostLines || !unset_keys_.insert(key).second) return false;
  unset_waits_.push_back(std::move(line));
  return true;
}

std::vector<std::string> StepReport::unset_waits() const {
  return failure_ ? unset_waits_ : std::vector<std::string>{};
}

bool StepReport::note_store_refusal(std::string line) {
  if (store_refusals_.size() >= kMostLines) return false;
  store_refusals_.push_back(std::move(line));
  return true;
}

std::string StepReport::rank_state(int i) const {
  const Rank& r = ranks_[static_cast<size_t>(i)];
  if (failure_ && failure_->rank == i) return "failed";
  if (!r.hello) return "not_connected";
  if (r.goodbye) return "done";
  return r.p.in_op_us() > 0 ? "in_collective" : "computing";
}

std::string StepReport::text(Clock::time_point now) const {
  // dp-top's table: one line per rank, then who the others wait for.
  // Counters are as of each rank's last heartbeat (heard_s ago), not one instant.
  std::string t = "rank  host              state           ops_done  wait%   in_coll_s  heard_s\n";
  for (int i = 0; i < world_size_; ++i) {
    const Rank& r = ranks_[static_cast<size_t>(i)];
    const std::string state = rank_state(i);
    const double ws = wait_share(r);
    char line[256];
    std::snprintf(
        line, sizeof line, "%-5d %-17s %-15s %-9llu %-7s %-10s %s\n", i,
        (r.host.empty() ? "?" : r.host.substr(0, 17)).c_str(), state.c_str(),
        static_cast<unsigned long long>(r.p.ops_done()), ws >= 0 ? num(100 * ws).c_str() : "-",
        num(static_cast<double>(r.p.in_op_us()) / 1e6, "%.2f").c_str(),
        r.has_progress ? num(std::chrono::duration<double>(now - r.p_at).count()).c_str() : "-");
    t += line;
  }
  const auto order = straggler_order();
  if (!order.empty()) {
    t += "slowest ranks (the others wait for them; least waiting first):";
    for (size_t k = 0; k < order.size() && k < 3; ++k) {
      t += (k ? ", " : " ") + rank_name(order[k]) + " waits " +
           num(100 * wait_share(ranks_[static_cast<size_t>(order[k])])) + "%";
    }
    t += "\n";
  }
  if (failure_) t += failure_->message + "\n";
  return t;
}

}  // namespace dp::daemon
