#include "dp/site_config.hpp"
#include "dp/shown_value.hpp"

#include <string_view>

#include "dp/params.hpp"

namespace dp {

const char* accelerator_kind_name(AcceleratorKind k) noexcept {
  switch (k) {
    case AcceleratorKind::none: return "none";
    case AcceleratorKind::cuda: return "cuda";
    case AcceleratorKind::ze: return "ze";
    case AcceleratorKind::rdu: return "rdu";
  }
  return "?";
}

const char* on_failure_name(OnFailure f) noexcept { return f == OnFailure::keep ? "keep" : "end"; }

std::optional<OnFailure> on_failure_named(std::string_view word) noexcept {
  for (OnFailure f : {OnFailure::end, OnFailure::keep})
    if (word == on_failure_name(f)) return f;
  return std::nullopt;
}

namespace {

// How a key's value is read and where it goes.
struct Value {
  enum Type { number, choice, path, port_range } type;
  long long min = 0, max = 0;                                    // number; each end of a port range
  int SiteConfig::*count = nullptr;                              // number; a port range's low end
  int SiteConfig::*high = nullptr;                               // a port range's high end
  std::string_view words;                                        // choice: "a|b|c"
  void (*choose)(SiteConfig&, std::string_view word) = nullptr;  // choice
  std::string SiteConfig::*text = nullptr;                       // path
};

constexpr Value number(int SiteConfig::*field, long long min, long long max) {
  return {Value::number, min, max, field, nullptr, {}, nullptr, nullptr};
}
constexpr Value choice(std::string_view words, void (*choose)(SiteConfig&, std::string_view)) {
  return {Value::choice, 0, 0, nullptr, nullptr, words, choose, nullptr};
}
constexpr Value path(std::string SiteConfig::*field) {
  return {Value::path, 0, 0, nullptr, nullptr, {}, nullptr, field};
}
constexpr Value port_range(int SiteConfig::*low, int SiteConfig::*high) {
  return {Value::port_range, 1024, 65535, low, high, {}, nullptr, nullptr};
}

// What the choices set; the parser checked the word against the choice's words.
void set_kind(SiteConfig& c, std::string_view word) {
  c.kind = AcceleratorKind::none;
  for (auto k : {AcceleratorKind::cuda, AcceleratorKind::ze, AcceleratorKind::rdu})
    if (word == accelerator_kind_name(k)) c.kind = k;
}
void set_resv_ports(SiteConfig& c, std::string_view word) { c.use_resv_ports = word == "use"; }
void set_default(SiteConfig& c, std::string_view word) { c.default_on = word == "on"; }
void set_on_failure(SiteConfig& c, std::string_view word) {
  c.on_failure = on_failure_named(word).value_or(OnFailure::end);
}
void set_on_hang(SiteConfig& c, std::string_view word) { c.end_on_hang = word == "end"; }
void set_straggler(SiteConfig& c, std::string_view word) { c.straggler_on = word == "name"; }
void set_store(SiteConfig& c, std::string_view word) { c.step_store = word == "step"; }
void set_port_fallback(SiteConfig& c, std::string_view word) { c.port_fallback_os = word == "os"; }
void set_spares_no_kill(SiteConfig& c, std::string_view word) { c.spares_no_kill = word == "set"; }

struct Entry {
  std::string_view key;
  std::string_view def;  // as an admin writes it; "": unset
  Value value;
  std::string_view meaning;
};

constexpr int kDay = 24 * 3600;

// The site keys: key, default, values, meaning; one entry each.
constexpr Entry kKeys[] = {
    {"kind", "cuda", choice("cuda|ze|rdu|none", set_kind),
     "the nodes' accelerators, which decide the mask variable: cuda CUDA_VISIBLE_DEVICES, ze "
     "ZE_AFFINITY_MASK (Intel GPU stacks), rdu SF_RNT_TILE_AFFINITY (SambaNova tiles), none no "
     "mask (CPU only; --dp-tiles is refused)"},
    {"devices_per_node", "0", number(&SiteConfig::devices_per_node, 0, 4096),
     "accelerators per node when Slurm's gres sets no CUDA_VISIBLE_DEVICES or ZE_AFFINITY_MASK "
     "(needed for kind=rdu); 0: trust Slurm's gres"},
    {"tiles_per_device", "1", number(&SiteConfig::tiles_per_device, 1, 1024),
     "stacks per Intel GPU (kind=ze) or tiles per RDU (kind=rdu); 1 with kind=cuda"},
    {"ports", "29400-29999", port_range(&SiteConfig::port_min, &SiteConfig::port_max),
     "MASTER_PORT range when Slurm reserved no ports for the step; each port is checked free and "
     "leased before use"},
    {"port_fallback", "off", choice("off|os", set_port_fallback),
     "os: when every port of the ports range is held (another user may squat it), MASTER_PORT is "
     "a port the OS chooses instead of failing the step; off: the step fails naming the holders"},
    {"resv_ports", "use", choice("use|ignore", set_resv_ports),
     "use: MASTER_PORT from the ports Slurm reserved for the step, if any (slurmctld's record of "
     "the step; the job's SLURM_STEP_RESV_PORTS is only compared with it); ignore: always the "
     "ports range"},
    {"daemon_ports", "", port_range(&SiteConfig::daemon_port_min, &SiteConfig::daemon_port_max),
     "the ports dp-rendezvousd listens on, on srun's host: the one listener there the step's "
     "nodes connect to, so a range the login host's firewall opens to them; unset: Slurm's "
     "SrunPortRange when slurm.conf sets one (srun's own listeners use it), else a port the "
     "kernel picks. A step whose range is all taken fails, naming it"},
    {"default", "off", choice("on|off", set_default),
     "on: every step is a slurm-dp step, as if srun had --dp-world=auto"},
    {"daemon", "", path(&SiteConfig::daemon_path),
     "the dp-rendezvousd to start; unset: the installed one"},
    {"lease_dir", "/run/slurm-dp/ports", path(&SiteConfig::lease_dir),
     "node-local folder of the MASTER_PORT leases, root's alone (0700)"},
    {"heartbeat_timeout", "60", number(&SiteConfig::heartbeat_timeout_s, 0, kDay),
     "seconds a rank may be silent while others are heard before the step is aborted (0: never); "
     "all ranks silent together is a suspension, so keep it above the gang-scheduling time slice. "
     "Also the bound of a network outage: a node's link to srun's host may be silent this long "
     "(its agent reconnects and keeps its ranks' places); longer, the step fails naming the node"},
    {"port_wait", "60", number(&SiteConfig::port_wait_s, 1, 3600),
     "seconds the other nodes wait for the master node's MASTER_PORT: skew in slurmstepd's own "
     "start there (a slow prolog); a container image pulled in user_init comes after the ports "
     "are published and is waited for in the program's own rendezvous"},
    {"hang_timeout", "120", number(&SiteConfig::hang_timeout_s, 0, kDay),
     "seconds a step may go without progress before it is named as hanging (0: off): no rank "
     "computes and no rank's Python frames move (any program, read by the node agents), or "
     "the others wait in a collective a live libdp rank does not enter; --dp-hang-timeout "
     "overrides it per step"},
    {"on_hang", "name", choice("name|end", set_on_hang),
     "name: a hang is named on srun's stderr, in the step report and in dp-top, and the step "
     "runs on; end: it is also ended as a failure (on_failure's way); --dp-on-hang overrides "
     "it per step"},
    {"straggler", "name", choice("name|off", set_straggler),
     "name: the rank (or the node's ranks) the others wait for is named on srun's stderr, in "
     "the step report and in dp-top, and its recovery too (any program: the node agents look "
     "at every rank's main thread ten times a second; libdp programs by their collective "
     "counters); off: not watched, nothing read; --dp-straggler overrides it per step"},
    {"straggler_threshold", "10", number(&SiteConfig::straggler_pct, 1, 90),
     "the percentage of the time the others must wait for a rank, over 30 s and in all but one "
     "5 s block of them, before it is named a straggler (README.md, Stragglers)"},
    {"report", "", path(&SiteConfig::report),
     "a step report (JSON) srun writes at every step's end, as the user, 0600 (%j job id, %s step "
     "id, %u user name; use a folder per user); unset: only --dp-report"},
    {"on_failure", "end", choice("end|keep", set_on_failure),
     "end: when the step fails (a task exits non-zero or by a signal, a node is lost or silent, "
     "the daemon is lost, a rank hangs) every node's agent ends its remaining tasks (SIGTERM, "
     "SIGKILL after kill_grace) and a node that cannot be reached is ended through slurmctld; "
     "keep: the failure is reported and named, and the survivors run on (frameworks that "
     "recover in place)"},
    {"store", "rank0", choice("step|rank0", set_store),
     "where unmodified PyTorch programs (env://, TORCHELASTIC_USE_AGENT_STORE) meet: step: each "
     "node's agent serves the step's store on loopback (MASTER_ADDR/MASTER_PORT of the task's "
     "own node), kept in the step's daemon, open to the step's user alone and alive when rank 0 "
     "dies; rank0: rank 0's program hosts PyTorch's TCPStore on MASTER_PORT. --dp-store wins"},
    {"kill_grace", "10", number(&SiteConfig::kill_grace_s, 0, 3600),
     "seconds between the SIGTERM the agents send a failed step's tasks (time to flush or "
     "checkpoint) and the SIGKILL"},
    {"max_ports", "8", number(&SiteConfig::max_ports, 0, kMaxStepPorts),
     "the most ports a step may take with --dp-ports=N besides MASTER_PORT, chosen and held on "
     "rank 0's node like MASTER_PORT (Slurm's reserved ports, else leases of ports=); 0: "
     "--dp-ports is refused"},
    {"lease_share", "0", number(&SiteConfig::lease_share, 0, 65535),
     "the most ports of the ports range one user's steps may hold leased on a node at once, "
     "MASTER_PORT and --dp-ports alike, whatever --dp-ports asks; 0: a quarter of the range"},
    {"max_spares", "4", number(&SiteConfig::max_spares, 0, 1024),
     "the most spare nodes a step may ask for with --dp-spares=K (they wait, parked, for a lost "
     "node's place); 0: --dp-spares is refused"},
    {"spare_timeout", "20", number(&SiteConfig::spare_timeout_s, 1, kDay),
     "seconds a node of a step with spares may be silent (frozen, cut off) before a spare takes "
     "its place, instead of heartbeat_timeout: a spare waits, so a restart costs seconds and "
     "waiting costs every rank; keep it above the network stalls the site rides out and above "
     "fence_after"},
    {"fence_after", "15", number(&SiteConfig::fence_after_s, 1, kDay),
     "seconds a node agent of a step with spares may hear nothing of the step's daemon before "
     "it kills its node's programs, their whole process trees, without grace: a node cut off "
     "or frozen never runs on beside the spare that took its place (the daemon starts the spare "
     "only once the lost node's programs are dead or this much has passed since it was heard); "
     "below spare_timeout"},
    {"max_restarts", "3", number(&SiteConfig::max_restarts, 0, 1000),
     "how many times a step with --dp-spares may restart its programs (a lost node replaced by a "
     "spare, or a program that failed on a live node) when it gives no --dp-max-restarts"},
    {"spares_no_kill", "off", choice("set|off", set_spares_no_kill),
     "set: srun defaults Slurm's --no-kill (SLURM_NO_KILL=set, before it reads its options) for a "
     "step or job that asks for --dp-spares, which a lost node would otherwise end; off: the "
     "user adds --no-kill, and a step with spares without it is refused naming it"},
};

// Keys of earlier releases, and why they went.
constexpr struct {
  std::string_view key, why;
} kRemoved[] = {
    {"idle_timeout", "it had no effect: the rendezvous daemon lives exactly as long as its srun"},
};

Error site_error(std::string_view word, std::string_view why) {
  return make_error(Errc::invalid_argument, "plugstack.conf setting '" + shown_value(word) +
                                                "': " + std::string(why) +
                                                " (ask the site administrator to fix it)");
}

// "a, b or c" for "a|b|c".
std::string spelled_out(std::string_view words) {
  std::string out(words);
  for (auto bar = out.find('|'); bar != std::string::npos; bar = out.find('|')) {
    const bool last = out.find('|', bar + 1) == std::string::npos;
    out.replace(bar, 1, last ? " or " : ", ");
  }
  return out;
}

bool is_one_of(std::string_view word, std::string_view words) {
  for (size_t start = 0; start <= words.size();) {
    size_t bar = words.find('|', start);
    if (bar == std::string_view::npos) bar = words.size();
    if (words.substr(start, bar - start) == word) return true;
    start = bar + 1;
  }
  return false;
}

// `word` is the whole key=value word, so a message shows what the admin wrote.
Result<int> site_int(std::string_view word, std::string_view key, std::string_view value,
                     long long min, long long max, std::string_view example) {
  auto n = parse_integer(value, min, max, key, example);
  if (!n) return site_error(word, n.error().message);
  return static_cast<int>(*n);
}

Result<void> read_ports(SiteConfig& c, const Entry& e, std::string_view word,
                        std::string_view value) {
  const std::string_view example = e.def.empty() ? "61000-61099" : e.def;
  const auto dash = value.find('-');
  if (dash == std::string_view::npos)
    return site_error(word, std::string(e.key) + " must be a range LOW-HIGH, e.g. " +
                                std::string(e.key) + "=" + std::string(example));
  const Value& v = e.value;
  const auto ex_dash = example.find('-');
  auto lo = site_int(word, e.key, value.substr(0, dash), v.min, v.max, example.substr(0, ex_dash));
  DP_TRY(lo);
  auto hi =
      site_int(word, e.key, value.substr(dash + 1), v.min, v.max, example.substr(ex_dash + 1));
  DP_TRY(hi);
  if (*lo > *hi) return site_error(word, "the range's low end is above its high end");
  c.*v.count = *lo;
  c.*v.high = *hi;
  return {};
}

Result<void> read_value(SiteConfig& c, const Entry& e, std::string_view word,
                        std::string_view value) {
  const Value& v = e.value;
  switch (v.type) {
    case Value::number: {
      auto n = site_int(word, e.key, value, v.min, v.max, e.def);
      DP_TRY(n);
      c.*v.count = *n;
      return {};
    }
    case Value::choice:
      if (!is_one_of(value, v.words))
        return site_error(word, std::string(e.key) + " must be " + spelled_out(v.words));
      v.choose(c, value);
      return {};
    case Value::path:
      if (value.empty() || value.front() != '/') return site_error(word, "needs an absolute path");
      c.*v.text = std::string(value);
      return {};
    case Value::port_range: return read_ports(c, e, word, value);
  }
  return site_error(word, "a key of no known type (a slurm-dp bug)");
}

std::string known_keys() {
  std::string known;
  for (const Entry& e : kKeys) known += (known.empty() ? "" : ", ") + std::string(e.key);
  return known;
}

Result<void> apply_word(SiteConfig& c, std::string_view word) {
  const auto eq = word.find('=');
  if (eq == std::string_view::npos || eq == 0) return site_error(word, "expected key=value");
  const std::string_view key = word.substr(0, eq);
  const std::string_view value = word.substr(eq + 1);
  for (const Entry& e : kKeys)
    if (key == e.key) return read_value(c, e, word, value);
  for (const auto& r : kRemoved) {
    if (key != r.key) continue;
    c.warnings.push_back("plugstack.conf setting '" + std::string(word) +
                         "' was removed from slurm-dp and is ignored (" + std::string(r.why) +
                         "); delete it from the plugin line");
    return {};
  }
  return site_error(word, "unknown key; known keys: " + known_keys());
}

std::string values_of(const Value& v) {
  switch (v.type) {
    case Value::number: return std::to_string(v.min) + ".." + std::to_string(v.max);
    case Value::choice: return std::string(v.words);
    case Value::path: return "/PATH";
    case Value::port_range: return "LOW-HIGH";
  }
  return "?";
}

}  // namespace

SiteConfig::SiteConfig() {
  // A default is read like any word of the plugin line (a unit test checks
  // that each is accepted).
  for (const Entry& e : kKeys)
    if (!e.def.empty()) (void)read_value(*this, e, e.key, e.def);
}

const SiteConfig& site_defaults() {
  static const SiteConfig defaults;
  return defaults;
}

const std::vector<SiteKey>& site_keys() {
  static const std::vector<SiteKey> keys = [] {
    std::vector<SiteKey> out;
    for (const Entry& e : kKeys)
      out.push_back(
          {std::string(e.key), std::string(e.def), values_of(e.value), std::string(e.meaning)});
    return out;
  }();
  return keys;
}

const std::vector<std::string>& removed_site_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const auto& r : kRemoved) out.emplace_back(r.key);
    return out;
  }();
  return keys;
}

Result<SiteConfig> parse_site_config(const std::vector<std::string>& words) {
  SiteConfig c;
  for (const auto& w : words) DP_TRY(apply_word(c, w));
  if (c.kind == AcceleratorKind::cuda && c.tiles_per_device != 1)
    return site_error("tiles_per_device=" + std::to_string(c.tiles_per_device),
                      "kind=cuda has one tile per GPU (MIG slices are separate Slurm devices); "
                      "remove it or set kind=ze/rdu");
  if (c.fence_after_s >= c.spare_timeout_s)
    return site_error("fence_after=" + std::to_string(c.fence_after_s),
                      "must stay below spare_timeout=" + std::to_string(c.spare_timeout_s) +
                          ": a lost node's programs are killed before its spare starts");
  return c;
}

}  // namespace dp
