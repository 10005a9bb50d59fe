#include "dp/options.hpp"
#include "dp/shown_value.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <utility>

namespace dp {

namespace {
// --dp-launcher's words, read by the option and printed by launcher_name.
constexpr std::pair<const char*, Launcher> kLauncherWords[] = {
    {"auto", Launcher::auto_detect}, {"torchrun", Launcher::torchrun}, {"none", Launcher::none}};
}  // namespace

const char* launcher_name(Launcher l) noexcept {
  for (const auto& [word, value] : kLauncherWords)
    if (value == l) return word;
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

// Slurm passes flags without a value; sbatch-propagated flags may carry "".
Result<bool> parse_flag(std::string_view name, const char* value) {
  if (value != nullptr && *value != '\0')
    return bad(name, value, "takes no value", "write just " + flag(name));
  return true;
}

Result<std::string> parse_report(std::string_view name, const char* value) {
  if (value == nullptr || *value == '\0')
    return make_error(
        Errc::invalid_argument,
        "--dp-report: missing file name; use --dp-report=FILE, e.g. --dp-report=step-%j.%s.json");
  for (const char* c = value; *c; ++c) {
    if (static_cast<unsigned char>(*c) < 0x20)
      return bad(name, "...", "contains a control character", "use a plain file name");
  }
  // Longer than the kernel takes (PATH_MAX): say so here, never echo it at the step's end.
  if (const size_t n = std::strlen(value); n >= 4096)
    return bad(name, value, "is " + std::to_string(n) + " bytes long",
               "use a file name of at most 4095 bytes");
  return std::string(value);
}

// A value's two ways: parsed from the option's text, and spelt back.
template <class T>
struct Codec {
  std::function<Result<T>(std::string_view name, const char* value)> parse;
  std::function<std::string(const T&)> spell;
};

// auto (stored as 0) or a number in [min, max].
Codec<int> auto_or(long long min, long long max, std::string example) {
  return {[=](std::string_view name, const char* value) -> Result<int> {
            auto n = parse_auto_or(name, value, min, max, example);
            DP_TRY(n);
            return *n;
          },
          [](const int& n) { return n > 0 ? std::to_string(n) : std::string("auto"); }};
}

Codec<int> number(long long min, long long max, std::string example) {
  return {[=](std::string_view name, const char* value) -> Result<int> {
            if (value == nullptr)
              return make_error(Errc::invalid_argument, flag(name) + ": missing value; use " +
                                                            flag(name) + "=N, e.g. " + flag(name) +
                                                            "=" + example);
            auto n = parse_integer(value, min, max, flag(name), example);
            DP_TRY(n);
            return static_cast<int>(*n);
          },
          [](const int& n) { return std::to_string(n); }};
}

// One of a few words; `fix` says what each means.
template <class T>
Codec<T> words(std::vector<std::pair<const char*, T>> choices, std::string why, std::string fix) {
  return {[=](std::string_view name, const char* value) -> Result<T> {
            const std::string_view v = value ? value : "";
            for (const auto& [word, t] : choices)
              if (v == word) return t;
            return bad(name, v, why, fix);
          },
          [=](const T& t) {
            for (const auto& [word, c] : choices)
              if (c == t) return std::string(word);
            return std::string(choices.front().first);
          }};
}

// off (stored as 0), or seconds: N, Ns, Nm or Nh, at most a day.
Codec<int> duration_or_off(std::string example) {
  return {[=](std::string_view name, const char* value) -> Result<int> {
            const std::string fix = "use " + flag(name) + "=DURATION (N, Ns, Nm or Nh, e.g. " +
                                    flag(name) + "=" + example + ") or " + flag(name) + "=off";
            if (value == nullptr || *value == '\0')
              return make_error(Errc::invalid_argument, flag(name) + ": missing value; " + fix);
            std::string_view v(value);
            if (v == "off") return 0;
            long long unit = 1;
            if (const char last = v.back(); last == 's' || last == 'm' || last == 'h') {
              unit = last == 'h' ? 3600 : last == 'm' ? 60 : 1;
              v.remove_suffix(1);
            }
            const bool digits = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
              return c >= '0' && c <= '9';
            });
            if (!digits || v.size() > 6) return bad(name, value, "not a duration", fix);
            const long long seconds = std::stoll(std::string(v)) * unit;
            if (seconds < 1 || seconds > 86'400)
              return bad(name, value, "out of range (1 s to 24 h)", fix);
            return static_cast<int>(seconds);
          },
          [](const int& s) { return s > 0 ? std::to_string(s) + "s" : std::string("off"); }};
}

const Codec<bool> kFlag{parse_flag, [](const bool&) { return std::string(); }};
const Codec<std::string> kFile{parse_report, [](const std::string& f) { return f; }};

// One option: what Slurm registers and shows in --help, the field it sets,
// and whether it travels to the nodes and tasks in DP_OPTIONS (srun's own,
// such as --dp-explain, do not).
struct Option {
  OptionSpec spec;
  bool to_nodes;
  const char* unset_spelling;  // DP_OPTIONS names it even when unset (nullptr: omitted)
  std::function<Result<void>(Options&, const char* value)> apply;
  std::function<bool(const Options&)> is_set;
  std::function<void(Options& to, const Options& from)> take;  // from's value, when set
  std::function<std::string(const Options&)> spell;            // the set value, as written
};

enum class Scope : bool { srun, nodes };

template <class T>
Option row(OptionSpec spec, std::optional<T> Options::*field, Codec<T> codec, Scope scope,
           const char* unset_spelling = nullptr) {
  return {spec,
          scope == Scope::nodes,
          unset_spelling,
          [=](Options& o, const char* value) -> Result<void> {
            auto v = codec.parse(spec.name, value);
            DP_TRY(v);
            o.*field = std::move(*v);
            return {};
          },
          [=](const Options& o) { return (o.*field).has_value(); },
          [=](Options& to, const Options& from) {
            if (from.*field) to.*field = from.*field;
          },
          [=](const Options& o) { return codec.spell(*(o.*field)); }};
}

// What the step is: its layout, ports, store, launcher, failure and report.
std::vector<Option> step_rows() {
  return {
      row({"dp-world", "auto|N",
           "[slurm-dp] data-parallel step: auto = the step's task count, or N (must equal it)"},
          &Options::world, auto_or(1, std::numeric_limits<int>::max(), "4"), Scope::nodes, "auto"),
      row({"dp-tiles", "K", "[slurm-dp] accelerator tiles (GPUs, stacks, RDU tiles) per task"},
          &Options::tiles, number(1, 4096, "1"), Scope::nodes),
      row({"dp-master-port", "auto|PORT",
           "[slurm-dp] MASTER_PORT: auto (reserved by Slurm or leased free) or a fixed port"},
          &Options::master_port, auto_or(1024, 65535, "29500"), Scope::nodes),
      row({"dp-explain", nullptr, "[slurm-dp] print every task's layout and start nothing"},
          &Options::explain, kFlag, Scope::srun),
      row({"dp-verbose", nullptr,
           "[slurm-dp] print the layout, the start-up timings and the daemon's messages on stderr"},
          &Options::verbose, kFlag, Scope::srun),
      row({"dp-report", "FILE",
           "[slurm-dp] write the step report (start-up timings, the store the ranks used, first "
           "failure, stragglers) as JSON at step end"},
          &Options::report, kFile, Scope::srun),
      row({"dp-launcher", "auto|torchrun|none",
           "[slurm-dp] one task per node runs a per-node launcher (torchrun) that forks the "
           "workers: auto = recognise it from the command"},
          &Options::launcher,
          words<Launcher>({std::begin(kLauncherWords), std::end(kLauncherWords)},
                          "not a launcher mode",
                          "use --dp-launcher=auto (recognise torchrun from the command), "
                          "torchrun or none"),
          Scope::nodes),
      row({"dp-on-failure", "end|keep",
           "[slurm-dp] when the step fails: end every remaining task (end, the site's default) "
           "or keep the survivors running and only name the failure (keep)"},
          &Options::on_failure,
          words<OnFailure>(
              {{"end", OnFailure::end}, {"keep", OnFailure::keep}}, "must be end or keep",
              "use --dp-on-failure=end (the default: a failure ends the whole step) or "
              "--dp-on-failure=keep (the survivors run on)"),
          Scope::nodes),
      row({"dp-master-socket", "close|pass|share",
           "[slurm-dp] pass: rank 0 gets MASTER_PORT (and DP_PORTS) already bound and "
           "listening, as DP_MASTER_LISTEN_FD (PyTorch: TCPStore(master_listen_fd=...)); share: "
           "slurm-dp holds each port as your user until the program listens on it, for servers "
           "that bind with SO_REUSEPORT (gRPC: JAX's coordinator); close: the hold ends at rank "
           "0's start and the program binds it (the default, but for the coordinator port of "
           "--dp-store=step, shared)"},
          &Options::master_socket,
          words<MasterSocket>({{"close", MasterSocket::close},
                               {"pass", MasterSocket::pass},
                               {"share", MasterSocket::share}},
                              "must be close, pass or share",
                              "use --dp-master-socket=pass (rank 0 gets MASTER_PORT as a "
                              "listening socket, DP_MASTER_LISTEN_FD), share (held until the "
                              "program listens, for servers that set SO_REUSEPORT) or close (the "
                              "program binds MASTER_PORT after rank 0's start)"),
          Scope::nodes),
      row({"dp-store", "step|rank0",
           "[slurm-dp] where unmodified PyTorch programs meet: step = each node's agent serves "
           "the step's store (MASTER_ADDR/MASTER_PORT of the task's own node, every rank a "
           "client); rank0 = rank 0's program hosts TCPStore on MASTER_PORT; default: the site's"},
          &Options::step_store,
          words<bool>({{"rank0", false}, {"step", true}}, "must be step or rank0",
                      "use --dp-store=step (the node agents serve PyTorch's store) or "
                      "--dp-store=rank0 (rank 0's program hosts it)"),
          Scope::nodes),
      row({"dp-ports", "N",
           "[slurm-dp] N more ports on rank 0's node, chosen and held like MASTER_PORT, for the "
           "step's other services (DP_PORTS, comma-separated; with --dp-master-socket=pass rank "
           "0 gets them listening, DP_PORTS_LISTEN_FDS)"},
          &Options::dp_port_count, number(0, kMaxStepPorts, "3"), Scope::nodes),
  };
}

// What watches the running step: hangs and stragglers.
std::vector<Option> watch_rows() {
  return {
      row({"dp-hang-timeout", "DURATION|off",
           "[slurm-dp] name the step as hanging when no rank has made progress for DURATION "
           "(20s, 5m): no rank computes and no rank's Python frames move; srun's stderr, the "
           "step report and dp-top show where every rank is (default: the site's hang_timeout)"},
          &Options::hang_timeout_s, duration_or_off("20s"), Scope::srun),
      row({"dp-on-hang", "name|end",
           "[slurm-dp] when the step hangs: name it and let it run (name, the default) or also "
           "end it as a failure (end)"},
          &Options::end_on_hang,
          words<bool>({{"name", false}, {"end", true}}, "must be name or end",
                      "use --dp-on-hang=name (the hang is named, the step runs on) or "
                      "--dp-on-hang=end (the hang ends the step, named)"),
          Scope::srun),
      row({"dp-straggler", "name|off",
           "[slurm-dp] name the rank (or node) the others wait for, and its recovery, on srun's "
           "stderr, in the step report and dp-top (name), or watch nothing (off); default: the "
           "site's straggler"},
          &Options::straggler,
          words<bool>({{"name", true}, {"off", false}}, "must be name or off",
                      "use --dp-straggler=name (a straggler is named) or --dp-straggler=off "
                      "(no watch)"),
          Scope::srun),
      row({"dp-spares", "K",
           "[slurm-dp] K of the step's nodes wait as spares (their tasks parked): when a node is "
           "lost, a spare takes its place (node rank, RANKs, LOCAL_RANKs, tiles) and every "
           "program starts again; needs srun --no-kill (and a job with --no-kill)"},
          &Options::spares, number(1, 1024, "1"), Scope::nodes),
      row({"dp-max-restarts", "R",
           "[slurm-dp] restart the step's programs in place at most R times (a lost node with a "
           "spare left, or a program that failed); default: the site's max_restarts with "
           "--dp-spares, else 0"},
          &Options::max_restarts, number(0, 1000, "3"), Scope::nodes),
  };
}

// The one list of slurm-dp's options, in --help order. A new option is one
// row in step_rows or watch_rows, its field in Options, and its meaning in
// README.md and slurm-dp(8) (packaging/tests checks both against this table).
const std::vector<Option>& options() {
  static const std::vector<Option> table = [] {
    std::vector<Option> t = step_rows();
    for (auto& w : watch_rows()) t.push_back(std::move(w));
    return t;
  }();
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
    if (name == o.spec.name) return o.apply(opts, value);
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
  std::string out;
  for (const Option& o : options()) {
    if (!o.to_nodes || (!o.is_set(opts) && o.unset_spelling == nullptr)) continue;
    out += (out.empty() ? "" : " ") + flag(o.spec.name) + "=" +
           (o.is_set(opts) ? o.spell(opts) : std::string(o.unset_spelling));
  }
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
    if (!r) return wrap_error(r.error(), r.error().message + " (in " + std::string(what) + ")");
  }
  if (!opts.world)
    return make_error(
        Errc::invalid_argument,
        std::string(what) + " names no --dp-world; srun writes this value, do not set it");
  return opts;
}

Options overlay(const Options& base, const Options& top) {
  Options o = base;
  for (const Option& row : options()) row.take(o, top);
  return o;
}

bool Options::any() const {
  return std::any_of(options().begin(), options().end(),
                     [&](const Option& o) { return o.is_set(*this); });
}

}  // namespace dp
