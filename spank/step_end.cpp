#include "step_end.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "dp/shown_value.hpp"
#include "report_file.hpp"
#include "step_socket.hpp"  // dp_client

namespace dp::spank {
namespace {

// The daemon's texts (the user's process, carrying what ranks named: a
// function, a file, a host) as srun prints them: one printable line each,
// already escaped where the daemon merged them; a forged "slurm-dp:" line
// stays inside its own.
constexpr size_t kShownReportLine = 16384;
std::string line_of(const std::string& text) { return shown_value(text, kShownReportLine); }

// A phase's time in srun's start-up line ("12.3ms"; "-": srun had none).
std::string phase_ms_text(double ms) {
  if (ms < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1fms", ms);
  return b;
}

using Json = nlohmann::ordered_json;

// srun's own phase times, to the microsecond; null where srun had none.
Json ms_figure(double ms) { return ms < 0 ? Json(nullptr) : Json(std::round(ms * 1000) / 1000); }

// srun's phases first, then the daemon's report as it wrote it (its
// fields follow), or why there is none.
std::string report_file_text(const StepEndFacts& st, const Result<proto::Stats>& stats) {
  Json report{{"srun",
               {{"check_ms", ms_figure(st.srun_check_ms)},
                {"layout_ms", ms_figure(st.srun_layout_ms)},
                {"daemon_up_ms", ms_figure(st.srun_daemon_ms)},
                {"ready_ms", ms_figure(st.srun_ready_ms)},
                {"store", st.store}}}};
  // The step's own daemon wrote it (the user's process): read, never trusted to parse.
  const Json daemon = stats ? Json::parse(stats->report_json(), nullptr, false) : Json();
  if (daemon.is_object() && !daemon.empty()) {
    for (const auto& [key, value] : daemon.items()) report[key] = value;
  } else {
    report["error"] = "the daemon's report was unavailable: " +
                      (stats ? std::string("empty or unreadable report") : stats.error().message);
  }
  return report.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace

void remember_step(StepEndFacts& st, uint32_t job_id, uint32_t step_id, const Options& opts,
                   const std::string& site_report, double ready_ms) {
  st.job_id = std::to_string(job_id);
  st.step_id = std::to_string(step_id);
  st.verbose = opts.verbose.value_or(false);
  const std::string pattern = opts.report ? *opts.report : site_report;
  st.report_file = pattern.empty()
                       ? ""
                       : expand_report_path(pattern, st.job_id, st.step_id, current_user_name());
  st.srun_ready_ms = ready_ms;
}

void report_step_end(const StepEndFacts& st) {
  if (st.job_id.empty()) return;
  const std::string label = "step " + st.job_id + "." + st.step_id;
  constexpr std::chrono::milliseconds kAsk{2'000};
  Result<proto::Stats> stats = st.report_socket.empty()
                                   ? obs::query_step(st.job_id, st.step_id, kAsk)
                                   : obs::query(st.report_socket, kAsk);
  const std::string srun_part = "srun: check " + phase_ms_text(st.srun_check_ms) + ", layout " +
                                phase_ms_text(st.srun_layout_ms) + ", daemon up " +
                                phase_ms_text(st.srun_daemon_ms) + ", ready " +
                                phase_ms_text(st.srun_ready_ms) + ", store " + st.store;
  if (st.verbose) {
    std::fprintf(stderr, "slurm-dp: %s start-up: %s; %s\n", label.c_str(), srun_part.c_str(),
                 line_of(stats ? stats->startup_line()
                               : "daemon report unavailable: " + stats.error().message)
                     .c_str());
  }
  if (!st.report_file.empty()) {
    if (auto w = write_report_file(st.report_file, report_file_text(st, stats)); !w)
      std::fprintf(stderr, "slurm-dp: %s: %s\n", label.c_str(), w.error().message.c_str());
  }
  // Requests of the program the step's store refused (each closed only its
  // client, as PyTorch's server does) and, PyTorch's own timeout naming no
  // key, the keys a failed step waited for and who never set them.
  if (stats) {
    for (const auto& line : stats->store_refusals())
      std::fprintf(stderr, "slurm-dp: %s: %s\n", label.c_str(), line_of(line).c_str());
    for (const auto& line : stats->store_waits_unset())
      std::fprintf(stderr, "slurm-dp: %s: %s\n", label.c_str(), line_of(line).c_str());
  }
  // Last, so it is srun's last line: who failed first, how, when; or that
  // the user ended the step (scancel, srun's Ctrl-C), which is no failure;
  // or that it completed after restarts in place (Slurm's own exit status
  // may still count a lost node's tasks: README.md, "Spare nodes").
  if (stats && !stats->first_failure().empty())
    std::fprintf(stderr, "slurm-dp: %s %s: %s\n", label.c_str(),
                 stats->ended_by_user() ? "ended" : "failed",
                 line_of(stats->first_failure()).c_str());
  else if (stats && stats->restarts_size() > 0)
    std::fprintf(stderr, "slurm-dp: %s completed after %d restart(s), %d spare(s) left; last: %s\n",
                 label.c_str(), stats->restarts_size(), std::max(stats->spares_left(), 0),
                 line_of(stats->restarts(stats->restarts_size() - 1)).c_str());
  std::fflush(stderr);
}

}  // namespace dp::spank
