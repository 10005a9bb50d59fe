// dp-top: a live view of one of your running slurm-dp steps.
//   dp-top [--json] [--once] [--interval SEC] [--stacks] JOBID[.STEP]
// It asks the step's daemon over the unix socket in your own 0700 folder
// ($XDG_RUNTIME_DIR/slurm-dp or /tmp/slurm-dp-<uid>, on the host where srun
// runs) or its abstract socket, served by your own uid only, so it sees only
// your steps; a job of another user is refused by name before any look.
// Root (an admin helping a user) sees any user's step, read-only: the job's
// user from slurmctld's record, that user's abstract sockets, and only a
// daemon of that uid; what it prints is the user's text, shown escaped.
#include <dirent.h>

#include <sys/types.h>
#include <unistd.h>
#include <algorithm>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dp/params.hpp"
#include "dp/shown_value.hpp"
#include "dp/slurm_api.hpp"
#include "dp/unique_fd.hpp"
#include "step_socket.hpp"

namespace {

const char* kUsage =
    "usage: dp-top [--json] [--once] [--interval SEC] [--stacks] JOBID[.STEP]\n"
    "  shows one of your running slurm-dp steps: ranks and nodes, state, progress and\n"
    "  wait share per rank, the slowest ranks, the start-up timings, the daemon's counters.\n"
    "  Run it on the host where the step's srun runs (the login node; for a batch job, its\n"
    "  first node: srun --jobid=JOBID --overlap -N1 dp-top JOBID.STEP).\n"
    "  --json          print the step report as JSON once (for scripts)\n"
    "  --once          print the view once instead of refreshing it\n"
    "  --interval SEC  seconds between refreshes (default 2)\n"
    "  --stacks        print once where every rank is now: each thread's Python frames\n"
    "                  (CPython 3.13+) or kernel state, ranks with identical stacks merged\n"
    "  As root, shows any user's step (read-only), from the host of its srun.\n";

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "dp-top: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// A Slurm configuration libslurm would read: SLURM_CONF, the default file,
// or slurmd's configless cache.
bool slurm_config_visible() {
  const char* conf = std::getenv("SLURM_CONF");
  for (const char* path : {conf ? conf : "", "/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf"})
    if (*path && access(path, R_OK) == 0) return true;
  return false;
}

// Whose step it is: the caller's own, another user's job refused by name;
// for root, the job's user as slurmctld records it (a job Slurm no longer
// knows has no step to show). A job Slurm no longer knows passes for a user:
// the socket folder is the real boundary.
bool job_owner(uint32_t job, uid_t& owner, std::string& why) {
  owner = getuid();
  // Without a configuration libslurm cannot start (it exits): root then sees
  // its own steps only, as a user without one would see nothing.
  if (owner == 0 && !slurm_config_visible()) return true;
  slurm_init(nullptr);
  job_info_msg_t* info = nullptr;
  if (dp::slurm::load_job(job, &info) != 0 || !info) {
    if (owner != 0) return true;
    why = "job " + std::to_string(job) + " is not known to slurmctld: no step to show";
    return false;
  }
  bool ok = true;
  for (uint32_t i = 0; i < info->record_count; ++i) {
    const uint32_t uid = info->job_array[i].user_id;
    if (getuid() == 0) {
      owner = uid;
    } else if (uid != getuid()) {
      ok = false;
      why = "job " + std::to_string(job) + " belongs to uid " + std::to_string(uid) +
            ", not to you (uid " + std::to_string(getuid()) + "): dp-top shows only your own steps";
    }
  }
  slurm_free_job_info_msg(info);
  return ok;
}

// The daemon's text (the user's process, carrying what ranks named), as a
// terminal may show it: one line of printable ASCII.
std::string shown(const std::string& line) { return dp::shown_value(line, 16384); }

// How deep a report may nest: ours nests 4 deep; re-encoding is recursive, so
// a report nested a million deep would overflow root's stack.
constexpr int kMostJsonDepth = 32;

// Whether `json`'s arrays and objects nest at most `limit` deep (strings, with
// their escapes, skipped); a cheap scan before any parse.
bool nests_within(std::string_view json, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

// The step report for scripts, re-encoded: valid JSON, ASCII only (every
// control character and non-ASCII letter a \u escape), whatever the daemon sent.
std::string shown_json(const std::string& json) {
  if (!nests_within(json, kMostJsonDepth))
    return "{\"error\": \"the daemon's report nests deeper than " + std::to_string(kMostJsonDepth) +
           " levels\"}";
  const auto parsed = nlohmann::json::parse(json, nullptr, false);
  if (parsed.is_discarded()) return "{\"error\": \"the daemon's report is not JSON\"}";
  return parsed.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

// The steps of job that have a daemon here, from the socket names (the
// caller's own folder too).
std::vector<std::string> steps_of(const std::string& dir, const std::string& job, uid_t owner) {
  std::vector<std::string> steps = dp::obs::running_steps(job, owner);
  if (dir.empty() || owner != getuid()) return steps;
  dp::UniqueDir d(dir.c_str());
  while (const dirent* e = d ? d.next() : nullptr) {
    const std::string n = e->d_name;
    if (n.rfind(job + ".", 0) != 0) continue;
    const size_t a = job.size() + 1, b = n.find('.', a);
    if (b == std::string::npos) continue;
    const std::string step = n.substr(a, b - a);
    if (all_digits(step) && n == dp::obs::socket_name(job, step) &&
        std::find(steps.begin(), steps.end(), step) == steps.end())
      steps.push_back(step);
  }
  return steps;
}

struct Args {
  bool json = false, once = false, stacks = false;
  double interval = 2;
  uint32_t job_id = 0;
  uid_t owner = 0;        // whose step: the caller's, or for root the job's user
  std::string job, step;  // as Slurm writes them; step empty: the job's one running step
};

// JOBID or JOBID.STEP, each a whole number Slurm could have given.
std::optional<int> parse_target(const std::string& target, Args& args) {
  const size_t dot = target.find('.');
  auto job = dp::parse_whole_number(target.substr(0, dot), 1, UINT32_MAX);
  auto step = dot == std::string::npos
                  ? dp::Result<long long>(0)
                  : dp::parse_whole_number(target.substr(dot + 1), 0, UINT32_MAX);
  if (!job || !step)
    return usage_error("'" + target + "' is not JOBID or JOBID.STEP (" +
                       (job ? step : job).error().message + "), e.g. 1234 or 1234.0");
  args.job_id = static_cast<uint32_t>(*job);
  args.job = std::to_string(*job);
  args.step = dot == std::string::npos ? "" : std::to_string(*step);
  return std::nullopt;
}

// Reads the command line; a value is main's exit code (--help, or a usage error).
std::optional<int> parse_args(int argc, char** argv, Args& args) {
  std::string target;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--json") {
      args.json = true;
    } else if (a == "--once") {
      args.once = true;
    } else if (a == "--stacks") {
      args.stacks = true;
    } else if (a == "--interval") {
      if (i + 1 >= argc) return usage_error("--interval: missing value; e.g. --interval 2");
      char* end = nullptr;
      args.interval = std::strtod(argv[++i], &end);
      if (!end || *end || args.interval < 0.2 || args.interval > 3600)
        return usage_error(std::string("--interval ") + argv[i] +
                           ": give seconds from 0.2 to 3600, e.g. --interval 2");
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option " + a);
    } else if (target.empty()) {
      target = a;
    } else {
      return usage_error("one JOBID[.STEP] only");
    }
  }
  if (target.empty()) return usage_error("which step? give JOBID or JOBID.STEP");
  return parse_target(target, args);
}

// With only JOBID given, the job's one step with a socket in dir; a value is
// main's exit code (none, or several to choose from).
std::optional<int> pick_step(const std::string& dir, Args& args) {
  if (!args.step.empty()) return std::nullopt;
  const auto steps = steps_of(dir, args.job, args.owner);
  if (steps.empty()) {
    std::fprintf(stderr,
                 "dp-top: job %s has no running slurm-dp step on this host (run dp-top where its "
                 "srun runs)\n",
                 args.job.c_str());
    return 1;
  }
  if (steps.size() > 1) {
    std::string list;
    for (const auto& s : steps) list += " " + args.job + "." + s;
    std::fprintf(stderr, "dp-top: job %s has several running steps; name one:%s\n",
                 args.job.c_str(), list.c_str());
    return 2;
  }
  args.step = steps.front();
  return std::nullopt;
}

// Each line of the daemon's `text`, shown escaped, behind `indent`.
void print_lines(const std::string& text, const char* indent) {
  for (size_t a = 0; a < text.size();) {
    const size_t b = text.find('\n', a);
    std::printf("%s%s\n", indent, shown(text.substr(a, b - a)).c_str());
    if (b == std::string::npos) break;
    a = b + 1;
  }
}

// Shows the step (its report socket, query_step): once (--json, --once, not a terminal) or every
// interval until it ends. Returns main's exit code.
int watch(const Args& args) {
  const bool refresh = !args.json && !args.once && isatty(STDOUT_FILENO);
  for (bool first = true;; first = false) {
    auto r = dp::obs::ask_step(args.job, args.step, dp::obs::stats_request(),
                               std::chrono::milliseconds(3'000), args.owner);
    auto st =
        r ? dp::Result<dp::proto::Stats>(r->stats()) : dp::Result<dp::proto::Stats>(r.error());
    if (!st) {
      if (!first) return 0;  // the step ended while we watched
      std::fprintf(stderr,
                   "dp-top: step %s.%s: %s (is it running, and is this the host of its srun?)\n",
                   args.job.c_str(), args.step.c_str(), st.error().message.c_str());
      return 1;
    }
    if (args.json) {
      std::printf("%s\n", shown_json(st->report_json()).c_str());
      return 0;
    }
    if (refresh) std::fputs("\033[H\033[2J", stdout);
    std::printf("dp-top: step %s.%s\n", args.job.c_str(), args.step.c_str());
    print_lines(st->rank_table(), "");
    std::printf("start-up: %s\n", shown(st->startup_line()).c_str());
    // A step that restarts in place (--dp-spares, --dp-max-restarts).
    if (st->spares_left() >= 0 || st->restarts_size() > 0) {
      std::printf("restarts: %d, spares left: %d\n", st->restarts_size(),
                  std::max(st->spares_left(), 0));
      for (const auto& line : st->restarts()) std::printf("  %s\n", shown(line).c_str());
    }
    std::printf("daemon:\n");
    print_lines(st->text(), "  ");
    std::fflush(stdout);
    if (!refresh) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(args.interval));
  }
}

// --stacks: the daemon asks every node agent to read its own node's ranks
// (as the job's user) and answers with the merged lines within about 2 s.
int print_stacks(const Args& args) {
  dp::proto::Request req;
  req.set_id(1);
  req.mutable_stacks();
  auto r =
      dp::obs::ask_step(args.job, args.step, req, std::chrono::milliseconds(5'000), args.owner);
  if (!r) {
    std::fprintf(stderr,
                 "dp-top: step %s.%s: no stacks: %s (is it running, and is this the host of its "
                 "srun?)\n",
                 args.job.c_str(), args.step.c_str(), r.error().message.c_str());
    return 1;
  }
  if (!r->has_stacks_view()) {
    std::fprintf(stderr, "dp-top: step %s.%s: the daemon sent no stacks (an older slurm-dp?)\n",
                 args.job.c_str(), args.step.c_str());
    return 1;
  }
  std::printf("dp-top: step %s.%s: stacks\n", args.job.c_str(), args.step.c_str());
  for (const auto& line : r->stacks_view().lines()) std::printf("%s\n", shown(line).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (auto rc = parse_args(argc, argv, args)) return *rc;
  std::string why;
  if (!job_owner(args.job_id, args.owner, why)) {
    std::fprintf(stderr, "dp-top: %s\n", why.c_str());
    return 1;
  }
  // The folder may be unusable (another user took /tmp/slurm-dp-<uid>):
  // the abstract sockets still answer; query_step says who must act.
  auto dir = dp::obs::user_dir(false);
  if (auto rc = pick_step(dir ? *dir : std::string(), args)) {
    if (!dir) std::fprintf(stderr, "dp-top: %s\n", dir.error().message.c_str());
    return *rc;
  }
  return args.stacks ? print_stacks(args) : watch(args);
}
