#include "step_end.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "report_file.hpp"
#include "step_socket.hpp"  // dp_client

namespace dp::spank {
namespace {

std::string ms_text(double ms) {
  if (ms < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1fms", ms);
  return b;
}

std::string num(double v) {
  if (v < 0) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
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
  const std::string srun_part = "srun: check " + ms_text(st.srun_check_ms) + ", layout " +
                                ms_text(st.srun_layout_ms) + ", daemon up " +
                                ms_text(st.srun_daemon_ms) + ", ready " + ms_text(st.srun_ready_ms);
  if (st.verbose) {
    std::fprintf(stderr, "slurm-dp: %s start-up: %s; %s\n", label.c_str(), srun_part.c_str(),
                 stats ? stats->startup_line().c_str()
                       : ("daemon report unavailable: " + stats.error().message).c_str());
  }
  if (!st.report_file.empty()) {
    std::string j = "{\"srun\":{\"check_ms\":" + num(st.srun_check_ms) +
                    ",\"layout_ms\":" + num(st.srun_layout_ms) +
                    ",\"daemon_up_ms\":" + num(st.srun_daemon_ms) +
                    ",\"ready_ms\":" + num(st.srun_ready_ms) + "}";
    if (stats && stats->report_json().size() > 2 && stats->report_json().front() == '{') {
      j += "," + stats->report_json().substr(1);
    } else {
      std::string why = stats ? std::string("empty report") : stats.error().message;
      for (char& c : why) {
        if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '\'';
      }
      j += ",\"error\":\"the daemon's report was unavailable: " + why + "\"}";
    }
    j += "\n";
    if (auto w = write_report_file(st.report_file, j); !w)
      std::fprintf(stderr, "slurm-dp: %s: %s\n", label.c_str(), w.error().message.c_str());
  }
  // Last, so it is srun's last line: who failed first, how, when; or that
  // the user ended the step (scancel, srun's Ctrl-C), which is no failure.
  if (stats && !stats->first_failure().empty())
    std::fprintf(stderr, "slurm-dp: %s %s: %s\n", label.c_str(),
                 stats->ended_by_user() ? "ended" : "failed", stats->first_failure().c_str());
  std::fflush(stderr);
}

}  // namespace dp::spank
