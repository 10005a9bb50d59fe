#include "options.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "dp/params.hpp"

namespace dp::daemon {
namespace {

Result<long long> parse_int(const std::string& opt, const std::string& v, long long lo,
                            long long hi) {
  auto n = parse_whole_number(v, lo, hi);
  if (!n) {
    return make_error(Errc::invalid_argument, opt + ": expected an integer in " +
                                                  std::to_string(lo) + ".." + std::to_string(hi) +
                                                  ", got '" + v + "' (" + n.error().message + ")");
  }
  return n;
}

// A numeric flag: its range, the field it sets and its help. --help shows
// the field's value in a fresh DaemonOptions as the default, so a default is
// written once, where the field is declared.
struct NumberOption {
  const char* name;
  const char* arg;  // "N", "MS"
  long long lo, hi;
  void (*set)(DaemonOptions&, long long);
  long long (*get)(const DaemonOptions&);
  const char* help;  // nullptr: the usage line shows it
  const char* zero;  // what 0 means (when accepted or the default); nullptr: nothing special
};

template <class T>
void store(T& field, long long n) {
  field = static_cast<T>(n);
}
void store(std::chrono::milliseconds& field, long long n) { field = std::chrono::milliseconds(n); }
template <class T>
long long shown(T value) {
  return static_cast<long long>(value);
}
long long shown(std::chrono::milliseconds value) { return value.count(); }

// The set and get functions of a flag bound to one field of DaemonOptions.
#define DP_FIELD(f)                                     \
  [](DaemonOptions& o, long long n) { store(o.f, n); }, \
      [](const DaemonOptions& o) { return shown(o.f); }

constexpr long long kHourMs = 3'600'000;
constexpr NumberOption kNumberOptions[] = {
    {"--world-size", "N", 1, 1 << 20, DP_FIELD(world_size), nullptr, nullptr},
    {"--nodes", "N", 1, 1 << 20, DP_FIELD(limits.nodes),
     "node agents the step expects, one per node: fds and the hello budget then follow nodes, "
     "not ranks",
     "ranks connect directly"},
    {"--max-connections", "N", 1, 10'000'000, DP_FIELD(max_connections), "most connections at once",
     "the fd limit, raised to the hard limit, minus 32"},
    {"--max-unauthenticated", "N", 1, 1'000'000, DP_FIELD(limits.max_unauthenticated),
     "connections waiting for hello beyond one per rank still to come; past that the oldest is "
     "evicted",
     nullptr},
    {"--max-pending-calls", "N", 0, 100'000'000, DP_FIELD(limits.max_pending_calls),
     "blocking calls (get, wait, barrier) pending at once in the step", "4 per rank + 4096"},
    {"--max-open-barriers", "N", 1, 1'000'000, DP_FIELD(limits.max_open_barriers),
     "barriers entered but not complete (each holds a byte per rank)", nullptr},
    {"--max-key-bytes", "N", 1, 1 << 20, DP_FIELD(limits.max_key_bytes), "largest key", nullptr},
    {"--max-value-bytes", "N", 0, 256 << 20, DP_FIELD(limits.max_value_bytes), "largest value",
     nullptr},
    {"--max-request-bytes", "N", 1, 256 << 20, DP_FIELD(limits.max_request_bytes),
     "largest request: its keys and values (a PyTorch multi_set by its total); a larger one is "
     "refused, its connection kept",
     nullptr},
    {"--max-total-bytes", "N", 0, 1ll << 40, DP_FIELD(limits.max_total_bytes),
     "keys + values of the step", nullptr},
    {"--hello-timeout-ms", "MS", 1, kHourMs, DP_FIELD(limits.hello_timeout),
     "close connections without hello after MS", nullptr},
    {"--heartbeat-timeout-ms", "MS", 0, kHourMs, DP_FIELD(limits.heartbeat_timeout),
     "a rank silent this long while others are heard aborts the job; all ranks silent: "
     "suspended, not dead",
     "off"},
    {"--hang-timeout-ms", "MS", 0, 24 * kHourMs, DP_FIELD(limits.hang_timeout),
     "no rank made progress for MS (the node agents' stacks: no rank computes, no rank's "
     "Python frames move), or a live libdp rank does not enter a collective the others have "
     "waited in for MS: the step hangs, named",
     "off"},
    {"--end-on-hang", "0|1", 0, 1, DP_FIELD(limits.end_on_hang),
     "1: a hang ends the step as a failure (the site's on_hang=end); 0: it is only named", nullptr},
    {"--straggler-pct", "PCT", 0, 90, DP_FIELD(limits.straggler_pct),
     "name the rank (or node's ranks) the others wait for PCT % of the time, consistently over "
     "30 s (the node agents' looks at every rank; libdp's counters), and its recovery",
     "off"},
    {"--spares", "K", 0, 1024, DP_FIELD(limits.spares),
     "K of the --nodes node agents wait as spares (--dp-spares): a lost node's place is a "
     "spare's, and the step restarts in place",
     "0"},
    {"--max-restarts", "R", 0, 1000, DP_FIELD(limits.max_restarts),
     "restarts in place the step may make (a lost node replaced, a failed program)", "0"},
    {"--tasks-per-node", "T", 0, 1 << 20, DP_FIELD(limits.tasks_per_node),
     "every node's ranks, with --spares or --max-restarts", nullptr},
    {"--restart-programs", "0|1", 0, 1, DP_FIELD(limits.restart_programs),
     "1: the node agents restart the programs; 0: per-node launchers restart their own "
     "workers, and a lost node only gives its place to a spare",
     nullptr},
    {"--restart-stop-ms", "MS", 1, kHourMs, DP_FIELD(limits.restart_stop),
     "how long the node agents may take to stop (or start) their programs in a restart; one "
     "that has not is lost",
     nullptr},
    {"--spare-silence-ms", "MS", 1, kHourMs, DP_FIELD(limits.spare_silence),
     "with spares: a node agent silent this long is lost and replaced (below "
     "--heartbeat-timeout-ms)",
     nullptr},
    {"--fence-ms", "MS", 1, kHourMs, DP_FIELD(limits.fence),
     "with spares: a lost node's spare starts only once its programs are dead (its link "
     "closed by its side) or this long after it was last heard, when its agent has killed them",
     nullptr},
    {"--notice-fd", "FD", 3, 1 << 20, DP_FIELD(notice_fd),
     "srun's stderr, inherited: the lines the user sees while the step runs (a hang named)",
     nullptr},
};
#undef DP_FIELD

const NumberOption* find_number_option(const std::string& name) {
  for (const NumberOption& n : kNumberOptions)
    if (name == n.name) return &n;
  return nullptr;
}

// "  --flag ARG   text (default ...)", the text wrapped at 80 columns under
// itself; `last` (the default) is never split.
std::string option_help(const std::string& flag, const std::string& text, const std::string& last) {
  constexpr size_t kIndent = 30, kWidth = 80;
  std::vector<std::string> words;
  for (size_t a = 0; a < text.size();) {
    const size_t b = std::min(text.find(' ', a), text.size());
    words.push_back(text.substr(a, b - a));
    a = b + 1;
  }
  words.push_back(last);
  std::string out = "  " + flag;
  out.resize(std::max(out.size() + 1, kIndent), ' ');
  size_t column = out.size();
  for (const std::string& w : words) {
    if (column > kIndent && column + 1 + w.size() > kWidth) {
      out += "\n" + std::string(kIndent, ' ');
      column = kIndent;
    } else if (column > kIndent) {
      out += ' ';
      ++column;
    }
    out += w;
    column += w.size();
  }
  return out + "\n";
}

// "LOW-HIGH" of --listen-ports.
Result<void> parse_listen_ports(const std::string& v, ListenRange& r) {
  const auto dash = v.find('-');
  auto lo = parse_int("--listen-ports", v.substr(0, dash), 1, 65535);
  if (!lo) return lo.error();
  auto hi =
      dash == std::string::npos ? lo : parse_int("--listen-ports", v.substr(dash + 1), 1, 65535);
  if (!hi) return hi.error();
  if (*lo > *hi)
    return make_error(Errc::invalid_argument, "--listen-ports " + v + ": LOW is above HIGH");
  r.low = static_cast<int>(*lo);
  r.high = static_cast<int>(*hi);
  return {};
}

// The setting's name goes into the user's message as it is: a word.
Result<void> parse_listen_ports_from(const std::string& v, ListenRange& r) {
  const bool word = !v.empty() && v.size() <= 32 && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  if (!word)
    return make_error(Errc::invalid_argument,
                      "--listen-ports-from: expected a setting's name (letters, digits, _)");
  r.setting = v;
  return {};
}

std::string default_text(const NumberOption& n, long long def) {
  if (def == 0 && n.zero) return std::string("(default: ") + n.zero + ")";
  std::string text = "(default " + std::to_string(def);
  if (n.zero && n.lo == 0) text += std::string(", 0: ") + n.zero;
  return text + ")";
}

}  // namespace

std::string usage_text() {
  const DaemonOptions defaults;
  std::string out =
      "usage: dp-rendezvousd --world-size N --job-id J --step-id S [options] < secret\n"
      "  reads the step secret (one line of >= 32 hex digits) from stdin, binds a port of\n"
      "  --listen-ports or an OS-chosen one, prints 'READY <port> <report socket>' on stdout,\n"
      "  logs to stderr.\n"
      "  lives as long as its parent (srun): exits on SIGTERM/SIGINT or when the parent dies.\n";
  out += option_help("--listen ADDR",
                     "address to bind: the one the ranks route to; '-': read it from the second "
                     "line of stdin",
                     "(default " + defaults.listen_addr + ")");
  out += option_help("--listen-ports LOW-HIGH",
                     "take a free port of this range, tried from a random one (a firewalled "
                     "login host's open range: srun passes the site's daemon_ports or Slurm's "
                     "SrunPortRange); none free: the daemon answers ERROR naming the range",
                     "(default: a port the OS chooses)");
  out += option_help("--listen-ports-from NAME",
                     "the setting the range comes from, as the error names it",
                     "(default: listen-ports)");
  out += option_help("--step-nodes LIST",
                     "the step's node addresses, comma-separated, or '-': the next line of stdin; "
                     "their connections without hello have a budget of their own",
                     "(default: none)");
  for (const NumberOption& n : kNumberOptions) {
    if (n.help == nullptr) continue;
    out += option_help(std::string(n.name) + " " + n.arg, n.help, default_text(n, n.get(defaults)));
  }
  out += option_help("--on-failure end|keep",
                     "end: a node lost or silent ends the step through slurmctld (srun need not "
                     "wait for Slurm's node timeout); keep: the failure is only reported (the "
                     "site's or the user's on_failure=keep)",
                     "(default end)");
  out += option_help("--hang-timeout-by site|user",
                     "who set --hang-timeout-ms: the hang verdict names the site's hang_timeout "
                     "or the user's own option",
                     "(default site)");
  return out;
}

namespace {

// One option of text (not a number): set, or an error naming it; false:
// not such an option.
Result<bool> set_text_option(DaemonOptions& o, const std::string& a, const std::string& v) {
  if (a == "--job-id") {
    o.job_id = v;
  } else if (a == "--step-id") {
    o.step_id = v;
  } else if (a == "--listen") {
    if (v.empty())
      return make_error(Errc::invalid_argument,
                        "--listen: empty address; give an IPv4/IPv6 address");
    o.listen_addr = v;
  } else if (a == "--listen-ports") {
    DP_TRY(parse_listen_ports(v, o.listen_ports));
  } else if (a == "--listen-ports-from") {
    DP_TRY(parse_listen_ports_from(v, o.listen_ports));
  } else if (a == "--step-nodes") {
    o.step_nodes = v;
  } else if (a == "--on-failure") {
    const auto f = on_failure_named(v);
    if (!f) return make_error(Errc::invalid_argument, "--on-failure: end or keep, got '" + v + "'");
    o.limits.on_failure = *f;
  } else if (a == "--hang-timeout-by") {
    if (v != "user" && v != "site")
      return make_error(Errc::invalid_argument, "--hang-timeout-by: user or site, got '" + v + "'");
    o.limits.hang_timeout_by_user = v == "user";
  } else {
    return false;
  }
  return true;
}

// The options together: what is required, and a step shape that adds up.
Result<void> check_together(const DaemonOptions& o) {
  if (o.world_size == 0)
    return make_error(Errc::invalid_argument,
                      "--world-size is required (the step's number of ranks)");
  if (o.limits.nodes > o.world_size + o.limits.spares)
    return make_error(
        Errc::invalid_argument,
        "--nodes exceeds --world-size + --spares (a node that is no spare has a rank)");
  // Per-node launchers (--restart-programs 0) all run: every node holds ranks.
  const int parked = o.limits.restart_programs ? o.limits.spares : 0;
  if ((o.limits.spares > 0 || o.limits.max_restarts > 0) &&
      (o.limits.tasks_per_node <= 0 || o.limits.nodes <= o.limits.spares ||
       (o.limits.nodes - parked) * static_cast<long long>(o.limits.tasks_per_node) != o.world_size))
    return make_error(Errc::invalid_argument,
                      "--spares/--max-restarts need --nodes and --tasks-per-node with (--nodes - "
                      "--spares) x --tasks-per-node = --world-size (--nodes x --tasks-per-node "
                      "with --restart-programs 0)");
  if (o.job_id.empty())
    return make_error(Errc::invalid_argument, "--job-id is required (SLURM_JOB_ID)");
  if (o.step_id.empty())
    return make_error(Errc::invalid_argument, "--step-id is required (SLURM_STEP_ID)");
  return {};
}

}  // namespace

Result<DaemonOptions> parse_options(const std::vector<std::string>& args) {
  DaemonOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      o.help = true;
      return o;
    }
    if (a.rfind("--", 0) != 0)
      return make_error(Errc::invalid_argument, "unexpected argument '" + a + "'; see --help");
    if (i + 1 >= args.size())
      return make_error(Errc::invalid_argument, a + ": missing value; see --help");
    const std::string& v = args[++i];
    if (const NumberOption* n = find_number_option(a)) {
      auto value = parse_int(a, v, n->lo, n->hi);
      if (!value) return value.error();
      n->set(o, *value);
      continue;
    }
    auto known = set_text_option(o, a, v);
    DP_TRY(known);
    if (!*known) return make_error(Errc::invalid_argument, "unknown option " + a + "; see --help");
  }
  DP_TRY(check_together(o));
  if (o.listen_ports.setting.empty()) o.listen_ports.setting = "listen-ports";
  return o;
}

Result<std::string> validate_secret(std::string line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.size() < 32 || line.size() > 512) {
    return make_error(
        Errc::invalid_argument,
        "secret on stdin: expected one line of 32 to 512 hex digits (at least 128 bits), got " +
            std::to_string(line.size()) + " characters");
  }
  for (char c : line) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return make_error(Errc::invalid_argument,
                        "secret on stdin: expected hex digits only (0-9, a-f)");
    }
  }
  return line;
}

}  // namespace dp::daemon
