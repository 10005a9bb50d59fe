#include "dp/options.hpp"

#include <limits>
#include <string>

namespace dp {

namespace {

std::string flag(std::string_view name) { return "--" + std::string(name); }

Error bad(std::string_view name, std::string_view value, std::string_view why,
          std::string_view fix) {
  return make_error(Errc::invalid_argument, flag(name) + "=" + std::string(value) + ": " +
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

Options overlay(const Options& base, const Options& top) {
  Options o = base;
  if (top.world) o.world = top.world;
  if (top.tiles) o.tiles = top.tiles;
  if (top.master_port) o.master_port = top.master_port;
  if (top.explain) o.explain = top.explain;
  if (top.verbose) o.verbose = top.verbose;
  if (top.report) o.report = top.report;
  return o;
}

}  // namespace dp
