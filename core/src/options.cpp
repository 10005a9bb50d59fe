#include "dp/options.hpp"
#include "dp/shown_value.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace dp {

const char* launcher_name(Launcher l) noexcept {
  switch (l) {
    case Launcher::auto_detect: return "auto";
    case Launcher::torchrun: return "torchrun";
    case Launcher::none: return "none";
  }
  return "auto";
}

namespace {

std::string flag(std::string_view name) { return "--" + std::string(name); }

Error bad(std::string_view name, std::string_view value, std::string_view why,
          std::string_view fix) {
  return make_error(Errc::invalid_argument, flag(name) + "=" + shown_value(value) + ": " +
                                                std::string(why) + "; " + std::string(fix));
}

// auto or an integer in [min, max]; auto is stored as 0.
Result<int> parse_auto_or(std::string_view name, const char* value, long long min, long long max,
                          std::string_view example) {
  if (value == nullptr)
    return make_error(Errc::invalid_argument, flag(name) + ": missing value; use " + flag(name) +
                                                  "=auto or " + flag(name) + "=" +
                                                  std::string(example));
  std::string_view v(value);
  if (v == "auto") return 0;
  auto n = parse_integer(v, min, max, flag(name), std::string(example) + " or auto");
  DP_TRY(n);
  return static_cast<int>(*n);
}

Result<void> apply_world(Options& opts, std::string_view name, const char* value) {
  auto w = parse_auto_or(name, value, 1, std::numeric_limits<int>::max(), "4");
  DP_TRY(w);
  opts.world = *w;
  return {};
}

Result<void> apply_tiles(Options& opts, std::string_view, const char* value) {
  if (value == nullptr)
    return make_error(Errc::invalid_argument,
                      "--dp-tiles: missing value; use --dp-tiles=K, e.g. --dp-tiles=1");
  auto t = parse_integer(value, 1, 4096, "--dp-tiles", "1");
  DP_TRY(t);
  opts.tiles = static_cast<int>(*t);
  return {};
}

Result<void> apply_master_port(Options& opts, std::string_view name, const char* value) {
  auto p = parse_auto_or(name, value, 1024, 65535, "29500");
  DP_TRY(p);
  opts.master_port = *p;
  return {};
}

// Slurm passes flags without a value; sbatch-propagated flags may carry "".
Result<void> set_flag(std::optional<bool>& field, std::string_view name, const char* value) {
  if (value != nullptr && *value != '\0')
    return bad(name, value, "takes no value", "write just " + flag(name));
  field = true;
  return {};
}

Result<void> apply_report(Options& opts, std::string_view name, const char* value) {
  if (value == nullptr || *value == '\0')
    return make_error(
        Errc::invalid_argument,
        "--dp-report: missing file name; use --dp-report=FILE, e.g. --dp-report=step-%j.%s.json");
  for (const char* c = value; *c; ++c) {
    if (static_cast<unsigned char>(*c) < 0x20)
      return bad(name, "...", "contains a control character", "use a plain file name");
  }
  opts.report = std::string(value);
  return {};
}

Result<void> apply_launcher(Options& opts, std::string_view name, const char* value) {
  const std::string_view v = value == nullptr ? "" : value;
  if (v == "auto") opts.launcher = Launcher::auto_detect;
  else if (v == "torchrun") opts.launcher = Launcher::torchrun;
  else if (v == "none") opts.launcher = Launcher::none;
  else
    return bad(name, v, "not a launcher mode",
               "use --dp-launcher=auto (recognise torchrun from the command), torchrun or none");
  return {};
}

Result<void> apply_on_failure(Options& opts, std::string_view name, const char* value) {
  const std::string_view v = value ? value : "";
  if (v != "end" && v != "keep")
    return bad(name, value ? value : "", "must be end or keep",
               "use --dp-on-failure=end (the default: a failure ends the whole step) or "
               "--dp-on-failure=keep (the survivors run on)");
  opts.keep_survivors = v == "keep";
  return {};
}

Result<void> apply_master_socket(Options& opts, std::string_view name, const char* value) {
  const std::string_view v = value ? value : "";
  if (v != "pass" && v != "close")
    return bad(name, v, "must be pass or close",
               "use --dp-master-socket=pass (rank 0 gets MASTER_PORT as a listening socket, "
               "DP_MASTER_LISTEN_FD) or close (the default: the program binds MASTER_PORT)");
  opts.pass_master_socket = v == "pass";
  return {};
}

// The one list of slurm-dp's options: what Slurm registers and shows in
// --help, and how each value is applied.
struct Option {
  OptionSpec spec;
  Result<void> (*apply)(Options&, std::string_view name, const char* value);
};

const std::vector<Option>& options() {
  static const std::vector<Option> table = {
      {{"dp-world", "auto|N",
        "[slurm-dp] data-parallel step: auto = the step's task count, or N (must equal it)"},
       apply_world},
      {{"dp-tiles", "K", "[slurm-dp] accelerator tiles (GPUs, stacks, RDU tiles) per task"},
       apply_tiles},
      {{"dp-master-port", "auto|PORT",
        "[slurm-dp] MASTER_PORT: auto (reserved by Slurm or leased free) or a fixed port"},
       apply_master_port},
      {{"dp-explain", nullptr, "[slurm-dp] print every task's layout and start nothing"},
       [](Options& o, std::string_view n, const char* v) { return set_flag(o.explain, n, v); }},
      {{"dp-verbose", nullptr,
        "[slurm-dp] print the layout, the start-up timings and the daemon's messages on stderr"},
       [](Options& o, std::string_view n, const char* v) { return set_flag(o.verbose, n, v); }},
      {{"dp-report", "FILE",
        "[slurm-dp] write the step report (start-up timings, first failure, stragglers) as JSON "
        "at step end"},
       apply_report},
      {{"dp-launcher", "auto|torchrun|none",
        "[slurm-dp] one task per node runs a per-node launcher (torchrun) that forks the "
        "workers: auto = recognise it from the command"},
       apply_launcher},
      {{"dp-on-failure", "end|keep",
        "[slurm-dp] when the step fails: end every remaining task (end, the site's default) or "
        "keep the survivors running and only name the failure (keep)"},
       apply_on_failure},
      {{"dp-master-socket", "close|pass",
        "[slurm-dp] pass: rank 0 gets MASTER_PORT already bound and listening, as "
        "DP_MASTER_LISTEN_FD (PyTorch: TCPStore(master_listen_fd=...)), so no other process "
        "can take the port first; close (default): the program binds it"},
       apply_master_socket},
  };
  return table;
}

}  // namespace

const std::vector<OptionSpec>& option_specs() {
  static const std::vector<OptionSpec> specs = [] {
    std::vector<OptionSpec> v;
    for (const Option& o : options()) v.push_back(o.spec);
    return v;
  }();
  return specs;
}

Result<void> apply_option(Options& opts, std::string_view name, const char* value) {
  for (const Option& o : options()) {
    if (name == o.spec.name) return o.apply(opts, name, value);
  }
  return make_error(Errc::invalid_argument,
                    flag(name) + ": not a slurm-dp option; see srun --help for the --dp-* options");
}

std::optional<Options> resolve_options(const Options& job, const Options& srun,
                                       bool site_default_on) {
  Options o = overlay(job, srun);
  if (!o.any() && !site_default_on) return std::nullopt;
  return o;
}

std::string format_node_options(const Options& opts) {
  // The world is always named, so the value is never empty: a step of the
  // site's default=on is --dp-world=auto.
  std::string out = "--dp-world=" + (opts.world.value_or(0) > 0 ? std::to_string(*opts.world)
                                                                : std::string("auto"));
  if (opts.tiles) out += " --dp-tiles=" + std::to_string(*opts.tiles);
  if (opts.master_port)
    out += " --dp-master-port=" +
           (*opts.master_port > 0 ? std::to_string(*opts.master_port) : std::string("auto"));
  if (opts.launcher) out += " --dp-launcher=" + std::string(launcher_name(*opts.launcher));
  if (opts.keep_survivors)
    out += std::string(" --dp-on-failure=") + (*opts.keep_survivors ? "keep" : "end");
  if (opts.pass_master_socket)
    out += std::string(" --dp-master-socket=") + (*opts.pass_master_socket ? "pass" : "close");
  return out;
}

Result<Options> parse_node_options(std::string_view text, std::string_view what) {
  Options opts;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find(' ', pos), text.size());
    const std::string word(text.substr(pos, end - pos));
    pos = end + 1;
    const size_t eq = word.find('=');
    if (word.rfind("--", 0) != 0 || eq == std::string::npos)
      return make_error(Errc::invalid_argument,
                        std::string(what) + ": '" + shown_value(word) +
                            "' is not --dp-NAME=VALUE; srun writes this value, do not set it");
    const std::string value = word.substr(eq + 1);
    auto r = apply_option(opts, std::string_view(word).substr(2, eq - 2), value.c_str());
    if (!r)
      return make_error(r.error().code, r.error().message + " (in " + std::string(what) + ")");
  }
  if (!opts.world)
    return make_error(
        Errc::invalid_argument,
        std::string(what) + " names no --dp-world; srun writes this value, do not set it");
  return opts;
}

Options overlay(const Options& base, const Options& top) {
  Options o = base;
  if (top.world) o.world = top.world;
  if (top.tiles) o.tiles = top.tiles;
  if (top.master_port) o.master_port = top.master_port;
  if (top.explain) o.explain = top.explain;
  if (top.verbose) o.verbose = top.verbose;
  if (top.report) o.report = top.report;
  if (top.launcher) o.launcher = top.launcher;
  if (top.keep_survivors) o.keep_survivors = top.keep_survivors;
  if (top.pass_master_socket) o.pass_master_socket = top.pass_master_socket;
  return o;
}

}  // namespace dp
