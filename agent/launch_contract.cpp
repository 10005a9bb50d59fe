#include "launch_contract.hpp"

#include <algorithm>

#include "dp/list_text.hpp"
#include "dp/params.hpp"

namespace dp::agent {
namespace {

Error bad(const std::string& why) {
  return make_error(Errc::protocol, "node agent settings: " + why);
}

bool printable(char c) { return c >= 0x20 && c < 0x7f; }

bool socket_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool path_char(char c) { return socket_char(c) || c == '/'; }

Result<std::vector<int32_t>> parse_ranks(std::string_view v) {
  std::vector<int32_t> out;
  for (std::string_view item : list_items(v)) {
    auto r = parse_whole_number(item, 0, INT32_MAX);
    if (!r) return bad("ranks: " + r.error().message);
    out.push_back(static_cast<int32_t>(*r));
  }
  if (out.empty()) return bad("no ranks");
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) return bad("a rank twice");
  return out;
}

// "29400,29401": at most kMaxHeldPorts ports, each once.
Result<std::vector<int>> parse_held_ports(std::string_view v) {
  std::vector<int> out;
  for (std::string_view item : list_items(v)) {
    auto p = parse_whole_number(item, 1, 65535);
    if (!p || out.size() >= kMaxHeldPorts) return bad("held_ports: a list of ports");
    out.push_back(static_cast<int>(*p));
  }
  std::vector<int> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return bad("held_ports: a port twice");
  return out;
}

std::string one_line(std::string v) {
  std::replace(v.begin(), v.end(), '\n', ' ');
  return v;
}

// One row per setting: its key, how a line's value sets the field, and the
// line's value from the field (nullopt: the line is left out). Root writes and
// the agent reads the rows in order, so a setting is a field and a row.
using Line = std::optional<std::string>;
struct Setting {
  const char* key;
  Result<void> (*set)(AgentSettings& s, std::string_view key, std::string_view v);
  Line (*get)(const AgentSettings& s);
};

template <auto Field>
Result<void> set_text(AgentSettings& s, std::string_view, std::string_view v) {
  s.*Field = std::string(v);
  return {};
}
template <auto Field>
Line get_text(const AgentSettings& s) {
  return one_line(s.*Field);
}

void store(int& f, long long n) { f = static_cast<int>(n); }
void store(uint32_t& f, long long n) { f = static_cast<uint32_t>(n); }
void store(std::chrono::milliseconds& f, long long n) { f = std::chrono::milliseconds(n); }
long long shown(long long n) { return n; }
long long shown(std::chrono::milliseconds d) { return d.count(); }

template <auto Field, long long Lo, long long Hi>
Result<void> set_number(AgentSettings& s, std::string_view key, std::string_view v) {
  auto n = parse_whole_number(v, Lo, Hi);
  if (!n) return bad(std::string(key) + ": " + n.error().message);
  store(s.*Field, *n);
  return {};
}
template <auto Field>
Line get_number(const AgentSettings& s) {
  return std::to_string(shown(s.*Field));
}

// A list of numbers, "4,6", as `Parse` reads it.
template <auto Field, auto Parse>
Result<void> set_list(AgentSettings& s, std::string_view, std::string_view v) {
  auto list = Parse(v);
  DP_TRY(list);
  s.*Field = std::move(*list);
  return {};
}
template <auto Field>
Line get_list(const AgentSettings& s) {
  std::string out;
  for (auto n : s.*Field) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

// A flag written as one of two words: `yes` sets it, `no` clears it.
Result<void> set_word(bool& field, std::string_view key, std::string_view v, const char* yes,
                      const char* no) {
  if (v != yes && v != no) return bad(std::string(key) + ": " + yes + "|" + no);
  field = v == yes;
  return {};
}

// The master node's published value: its port and --dp-ports, or its failure.
bool publishes(const AgentSettings& s, bool failure) {
  return s.master == PortsRole::publish && s.published.failure.has_value() == failure;
}
template <std::string MasterFailure::*Field>
Result<void> set_failure(AgentSettings& s, std::string_view, std::string_view v) {
  if (!s.published.failure) s.published.failure.emplace();
  (*s.published.failure).*Field = v;
  return {};
}
template <std::string MasterFailure::*Field>
Line get_failure(const AgentSettings& s) {
  if (!publishes(s, true)) return std::nullopt;
  return one_line((*s.published.failure).*Field);
}

constexpr long long kDayMs = 86'400'000;
const Setting kSettings[] = {
    {"addr", set_text<&AgentSettings::addr>, get_text<&AgentSettings::addr>},
    {"secret", set_text<&AgentSettings::secret>, get_text<&AgentSettings::secret>},
    {"host", set_text<&AgentSettings::host>, get_text<&AgentSettings::host>},
    {"job", set_number<&AgentSettings::job, 0, UINT32_MAX>, get_number<&AgentSettings::job>},
    {"step", set_number<&AgentSettings::step, 0, UINT32_MAX>, get_number<&AgentSettings::step>},
    {"world", set_number<&AgentSettings::world_size, 1, INT32_MAX>,
     get_number<&AgentSettings::world_size>},
    // A spare node (--dp-spares) holds no ranks until it takes a lost node's place.
    {"ranks", set_list<&AgentSettings::ranks, parse_ranks>,
     [](const AgentSettings& s) -> Line {
       return s.ranks.empty() ? std::nullopt : get_list<&AgentSettings::ranks>(s);
     }},
    {"node", set_number<&AgentSettings::node, -1, INT32_MAX>, get_number<&AgentSettings::node>},
    {"tasks", set_list<&AgentSettings::task_ids, parse_ranks>,
     [](const AgentSettings& s) -> Line {
       return s.task_ids.empty() ? std::nullopt : get_list<&AgentSettings::task_ids>(s);
     }},
    {"keepers",
     [](AgentSettings& s, std::string_view key, std::string_view v) {
       return set_word(s.keepers, key, v, "keep", "none");
     },
     [](const AgentSettings& s) -> Line { return s.keepers ? "keep" : "none"; }},
    {"master",
     [](AgentSettings& s, std::string_view, std::string_view v) -> Result<void> {
       if (v == "none") s.master = PortsRole::none;
       else if (v == "publish") s.master = PortsRole::publish;
       else if (v == "fetch") s.master = PortsRole::fetch;
       else return bad("master: none|publish|fetch");
       return {};
     },
     [](const AgentSettings& s) -> Line {
       return s.master == PortsRole::publish ? "publish"
              : s.master == PortsRole::fetch ? "fetch"
                                             : "none";
     }},
    {"master_failure_node", set_failure<&MasterFailure::node>, get_failure<&MasterFailure::node>},
    {"master_failure_reason", set_failure<&MasterFailure::reason>,
     get_failure<&MasterFailure::reason>},
    {"master_port",
     [](AgentSettings& s, std::string_view key, std::string_view v) -> Result<void> {
       auto n = parse_whole_number(v, 1, 65535);
       if (!n) return bad(std::string(key) + ": " + n.error().message);
       s.published.coordinator = static_cast<int>(*n);
       return {};
     },
     [](const AgentSettings& s) -> Line {
       if (!publishes(s, false)) return std::nullopt;
       return std::to_string(s.published.coordinator);
     }},
    {"dp_ports",
     [](AgentSettings& s, std::string_view key, std::string_view v) -> Result<void> {
       auto ports = parse_ports_text(v, key);
       DP_TRY(ports);
       s.published.dp_ports = std::move(*ports);
       return {};
     },
     [](const AgentSettings& s) -> Line {
       if (!publishes(s, false)) return std::nullopt;
       return ports_text(s.published.dp_ports);
     }},
    {"port_wait_ms", set_number<&AgentSettings::port_wait, 0, kDayMs>,
     get_number<&AgentSettings::port_wait>},
    {"kill_grace_ms", set_number<&AgentSettings::kill_grace, 0, kDayMs>,
     get_number<&AgentSettings::kill_grace>},
    {"heartbeat_timeout_ms", set_number<&AgentSettings::heartbeat_timeout, 0, kDayMs>,
     get_number<&AgentSettings::heartbeat_timeout>},
    {"fence_after_ms", set_number<&AgentSettings::fence_after, 0, kDayMs>,
     get_number<&AgentSettings::fence_after>},
    {"on_failure",
     [](AgentSettings& s, std::string_view key, std::string_view v) -> Result<void> {
       const auto f = on_failure_named(v);
       if (!f) return bad(std::string(key) + ": end|keep");
       s.on_failure = *f;
       return {};
     },
     [](const AgentSettings& s) -> Line { return on_failure_name(s.on_failure); }},
    {"workers",
     [](AgentSettings& s, std::string_view key, std::string_view v) {
       return set_word(s.watch_workers, key, v, "watch", "none");
     },
     [](const AgentSettings& s) -> Line { return s.watch_workers ? "watch" : "none"; }},
    {"store",
     [](AgentSettings& s, std::string_view key, std::string_view v) {
       return set_word(s.serve_store, key, v, "step", "none");
     },
     [](const AgentSettings& s) -> Line { return s.serve_store ? "step" : "none"; }},
    {"held_ports", set_list<&AgentSettings::held_ports, parse_held_ports>,
     get_list<&AgentSettings::held_ports>},
};

Result<void> set_field(AgentSettings& s, std::string_view key, std::string_view v) {
  for (const Setting& row : kSettings)
    if (key == row.key) return row.set(s, key, v);
  return bad("unknown key '" + std::string(key) + "'");
}

}  // namespace

std::string format_settings(const AgentSettings& s) {
  std::string out;
  for (const Setting& row : kSettings)
    if (const Line value = row.get(s)) out += std::string(row.key) + "=" + *value + "\n";
  return out + "\n";
}

Result<AgentSettings> parse_settings(std::string_view text) {
  if (text.size() > kMaxSettingsBytes) return bad("too long");
  AgentSettings s;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) break;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return bad("a line without '='");
    DP_TRY(set_field(s, line.substr(0, eq), line.substr(eq + 1)));
  }
  // A spare node (tasks but no ranks yet) is the one node without ranks.
  if (s.addr.empty() || s.secret.empty() || s.host.empty() ||
      (s.ranks.empty() && s.task_ids.empty()) || s.world_size < 1)
    return bad("addr, secret, host, world and ranks (or a spare's tasks) are required");
  if (!s.ranks.empty() && s.ranks.back() >= s.world_size) return bad("a rank outside the world");
  if (s.master == PortsRole::publish) {
    const auto& f = s.published.failure;
    if (f ? f->node.empty() : s.published.coordinator < 1)
      return bad("master=publish needs master_port, or master_failure_node and its reason");
  }
  return s;
}

std::string format_answer(const Result<AgentAnswer>& a) {
  if (!a) return "ERROR " + one_line(a.error().message) + "\n";
  if (!a->refusal.empty()) return "ERROR " + one_line(a->refusal) + "\n";
  if (const auto& f = a->master_failure) {
    std::string node = one_line(f->node);
    std::replace(node.begin(), node.end(), ' ', '_');
    return "MASTER_FAILED " + node + " " + one_line(f->reason) + "\n";
  }
  std::string store;
  if (a->store_port > 0) store = " store=" + std::to_string(a->store_port);
  if (!a->dp_ports.empty()) store += " dp_ports=" + ports_text(a->dp_ports);
  if (a->ras_port > 0) store += " ras=" + std::to_string(a->ras_port);
  if (!a->flight_dir.empty()) store += " fr=" + a->flight_dir;
  return "READY " + std::to_string(a->port) + " " + a->socket + store + "\n";
}

namespace {

// The value of the field " KEY=<value>" that ends `rest`, cut off it; none:
// absent. The fields come in a fixed order, so the last is cut first.
std::optional<std::string_view> cut_field(std::string_view& rest, std::string_view key) {
  const size_t at = rest.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view value = rest.substr(at + key.size());
  rest = rest.substr(0, at);
  return value;
}

// The NCCL ranks' flight-recorder folder: an absolute path of plain characters.
bool flight_dir_ok(std::string_view d) {
  return !d.empty() && d.size() <= kMaxSocketName && d[0] == '/' &&
         d.find("..") == std::string_view::npos && std::all_of(d.begin(), d.end(), path_char);
}

}  // namespace

Result<AgentAnswer> parse_answer(std::string_view line) {
  if (line.rfind("ERROR ", 0) == 0 && line.size() > 6) {
    AgentAnswer refused;
    refused.refusal = std::string(line.substr(6));
    return refused;
  }
  auto wrong = [&] {
    return make_error(Errc::protocol, "the node agent answered '" +
                                          std::string(line.substr(0, 80)) + "', not READY");
  };
  const bool failed = line.rfind("MASTER_FAILED ", 0) == 0;
  if (!failed && line.rfind("READY ", 0) != 0) return wrong();
  std::string_view rest = line.substr(failed ? 14 : 6);
  const size_t sp = rest.find(' ');
  if (sp == std::string_view::npos) return wrong();
  AgentAnswer a;
  if (failed) {
    const std::string_view node = rest.substr(0, sp), reason = rest.substr(sp + 1);
    if (node.empty() || node.size() > 255 || !std::all_of(rest.begin(), rest.end(), printable))
      return wrong();
    a.master_failure = MasterFailure{std::string(node), std::string(reason)};
    return a;
  }
  auto port = parse_whole_number(rest.substr(0, sp), 0, 65535);
  std::string_view name = rest.substr(sp + 1);
  const auto flight_dir = cut_field(name, " fr=");
  if (flight_dir && !flight_dir_ok(*flight_dir)) return wrong();
  Result<long long> ras = 0, store = 0;
  if (auto v = cut_field(name, " ras=")) ras = parse_whole_number(*v, 1, 65535);
  // The step's --dp-ports, fetched from the master node.
  Result<std::vector<int>> ports = std::vector<int>();
  if (auto v = cut_field(name, " dp_ports=")) {
    ports = parse_ports_text(*v, "dp_ports");
    if (ports && ports->empty()) return wrong();
  }
  // The node's PyTorch store (settings store=step).
  if (auto v = cut_field(name, " store=")) store = parse_whole_number(*v, 1, 65535);
  if (!port || !store || !ports || !ras || name.size() < 2 || name.size() > kMaxSocketName ||
      name[0] != '@' || !std::all_of(name.begin() + 1, name.end(), socket_char))
    return wrong();
  a.port = static_cast<int>(*port);
  a.socket = std::string(name);
  a.store_port = static_cast<int>(*store);
  a.dp_ports = std::move(*ports);
  a.flight_dir = std::string(flight_dir.value_or(""));
  a.ras_port = static_cast<int>(*ras);
  return a;
}

std::string format_task_exit(int rank, int wait_status) {
  return "rank " + std::to_string(rank) + " exited status " + std::to_string(wait_status) + "\n";
}

std::optional<std::pair<int, int>> parse_task_exit(std::string_view line) {
  constexpr std::string_view kRank = "rank ", kExited = " exited status ";
  if (line.rfind(kRank, 0) != 0) return std::nullopt;
  line.remove_prefix(kRank.size());
  const size_t mid = line.find(kExited);
  if (mid == std::string_view::npos) return std::nullopt;
  auto rank = parse_whole_number(line.substr(0, mid), 0, INT32_MAX);
  auto status = parse_whole_number(line.substr(mid + kExited.size()), 0, 0xffff);
  if (!rank || !status) return std::nullopt;
  return std::pair<int, int>(static_cast<int>(*rank), static_cast<int>(*status));
}

std::string format_task_start(const TaskStart& t) {
  return "rank " + std::to_string(t.rank) + " pid " + std::to_string(t.pid) + " start " +
         std::to_string(t.start_ticks) + "\n";
}

std::optional<TaskStart> parse_task_start(std::string_view line) {
  constexpr std::string_view kRank = "rank ", kPid = " pid ", kStart = " start ";
  if (line.rfind(kRank, 0) != 0) return std::nullopt;
  line.remove_prefix(kRank.size());
  const size_t pid_at = line.find(kPid), start_at = line.find(kStart);
  if (pid_at == std::string_view::npos || start_at == std::string_view::npos || start_at < pid_at)
    return std::nullopt;
  auto rank = parse_whole_number(line.substr(0, pid_at), 0, INT32_MAX);
  auto pid = parse_whole_number(line.substr(pid_at + kPid.size(), start_at - pid_at - kPid.size()),
                                2, INT32_MAX);
  auto start = parse_whole_number(line.substr(start_at + kStart.size()), 0, INT64_MAX);
  if (!rank || !pid || !start) return std::nullopt;
  return TaskStart{static_cast<int>(*rank), static_cast<int>(*pid),
                   static_cast<unsigned long long>(*start)};
}

}  // namespace dp::agent
