#include "options.hpp"

#include <cctype>

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

// The numeric options: each one line with its range and where it goes.
struct NumberOption {
  const char* name;
  long long lo, hi;
  void (*set)(DaemonOptions&, long long);
};

using std::chrono::milliseconds;
constexpr NumberOption kNumberOptions[] = {
    {"--world-size", 1, 1 << 20, [](DaemonOptions& o, long long n) { o.world_size = int(n); }},
    {"--nodes", 1, 1 << 20, [](DaemonOptions& o, long long n) { o.limits.nodes = int(n); }},
    // Accepted from plugins of earlier releases; the daemon now lives exactly as long as srun.
    {"--idle-timeout", 0, 30 * 24 * 3600, [](DaemonOptions&, long long) {}},
    {"--max-unauthenticated", 1, 1'000'000,
     [](DaemonOptions& o, long long n) { o.limits.max_unauthenticated = int(n); }},
    {"--max-connections", 1, 10'000'000,
     [](DaemonOptions& o, long long n) { o.max_connections = int(n); }},
    {"--max-key-bytes", 1, 1 << 20,
     [](DaemonOptions& o, long long n) { o.limits.max_key_bytes = uint32_t(n); }},
    {"--max-value-bytes", 0, 256 << 20,
     [](DaemonOptions& o, long long n) { o.limits.max_value_bytes = uint32_t(n); }},
    {"--max-total-bytes", 0, 1ll << 40,
     [](DaemonOptions& o, long long n) { o.limits.max_total_bytes = uint64_t(n); }},
    {"--hello-timeout-ms", 1, 3'600'000,
     [](DaemonOptions& o, long long n) { o.limits.hello_timeout = milliseconds(n); }},
    {"--heartbeat-timeout-ms", 0, 3'600'000,
     [](DaemonOptions& o, long long n) { o.limits.heartbeat_timeout = milliseconds(n); }},
    {"--hang-timeout-ms", 0, 24 * 3'600'000,
     [](DaemonOptions& o, long long n) { o.limits.hang_timeout = milliseconds(n); }},
};

const NumberOption* find_number_option(const std::string& name) {
  for (const NumberOption& n : kNumberOptions)
    if (name == n.name) return &n;
  return nullptr;
}

}  // namespace

const char* usage_text() noexcept {
  return "usage: dp-rendezvousd --world-size N --job-id J --step-id S [options] < secret\n"
         "  reads the step secret (one line of >= 32 hex digits) from stdin, binds an OS-chosen "
         "port,\n"
         "  prints 'READY <port>' on stdout, logs to stderr.\n"
         "  lives as long as its parent (srun): exits on SIGTERM/SIGINT or when the parent dies.\n"
         "  --listen ADDR               address to bind: the one the ranks route to (default "
         "0.0.0.0);\n"
         "                              '-': read it from the second line of stdin\n"
         "  --nodes N                   node agents the step expects (one per node, issue 14): "
         "fds\n"
         "                              and the hello budget then follow nodes, not ranks\n"
         "  --idle-timeout SEC          accepted from plugins of earlier releases; no effect\n"
         "  --max-connections N         (default: the fd limit, raised to the hard limit, minus "
         "32)\n"
         "  --max-unauthenticated N     connections waiting for hello beyond one per rank still to "
         "come;\n"
         "                              past that the oldest is evicted (default 64)\n"
         "  --max-key-bytes N           (default 4096)\n"
         "  --max-value-bytes N         (default 1048576)\n"
         "  --max-total-bytes N         keys + values of the step (default 134217728)\n"
         "  --hello-timeout-ms MS       close connections without hello (default 5000)\n"
         "  --heartbeat-timeout-ms MS   a rank silent this long while others are heard aborts the "
         "job\n"
         "                              (default 60000, 0: off); all ranks silent: suspended, not "
         "dead\n"
         "  --hang-timeout-ms MS        a live rank that does not enter a collective the others "
         "have\n"
         "                              waited in for MS aborts the job, named (default 120000, 0: "
         "off)\n";
}

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
    } else if (a == "--job-id") {
      o.job_id = v;
    } else if (a == "--step-id") {
      o.step_id = v;
    } else if (a == "--listen") {
      if (v.empty())
        return make_error(Errc::invalid_argument,
                          "--listen: empty address; give an IPv4/IPv6 address");
      o.listen_addr = v;
    } else {
      return make_error(Errc::invalid_argument, "unknown option " + a + "; see --help");
    }
  }
  if (o.world_size == 0)
    return make_error(Errc::invalid_argument,
                      "--world-size is required (the step's number of ranks)");
  if (o.limits.nodes > o.world_size)
    return make_error(Errc::invalid_argument, "--nodes exceeds --world-size (a node has a rank)");
  if (o.job_id.empty())
    return make_error(Errc::invalid_argument, "--job-id is required (SLURM_JOB_ID)");
  if (o.step_id.empty())
    return make_error(Errc::invalid_argument, "--step-id is required (SLURM_STEP_ID)");
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
