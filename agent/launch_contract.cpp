#include "launch_contract.hpp"

#include <algorithm>

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

Result<std::vector<int32_t>> parse_ranks(std::string_view v) {
  std::vector<int32_t> out;
  while (!v.empty()) {
    const size_t comma = v.find(',');
    auto r = parse_whole_number(v.substr(0, comma), 0, INT32_MAX);
    if (!r) return bad("ranks: " + r.error().message);
    out.push_back(static_cast<int32_t>(*r));
    v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
  }
  if (out.empty()) return bad("no ranks");
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) return bad("a rank twice");
  return out;
}

// "29400,29401": at most kMaxHeldPorts ports, each once.
Result<std::vector<int>> parse_held_ports(std::string_view v) {
  std::vector<int> out;
  while (!v.empty()) {
    const size_t comma = v.find(',');
    auto p = parse_whole_number(v.substr(0, comma), 1, 65535);
    if (!p || out.size() >= kMaxHeldPorts) return bad("held_ports: a list of ports");
    out.push_back(static_cast<int>(*p));
    v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
  }
  std::vector<int> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return bad("held_ports: a port twice");
  return out;
}

Result<void> set_field(AgentSettings& s, std::string_view key, std::string_view v) {
  auto number = [&](long long lo, long long hi) -> Result<long long> {
    auto n = parse_whole_number(v, lo, hi);
    if (!n) return bad(std::string(key) + ": " + n.error().message);
    return *n;
  };
  if (key == "addr") s.addr = v;
  else if (key == "secret") s.secret = v;
  else if (key == "host") s.host = v;
  else if (key == "master_failure_node" || key == "master_failure_reason") {
    if (!s.published.failure) s.published.failure.emplace();
    auto& f = *s.published.failure;
    (key == "master_failure_node" ? f.node : f.reason) = v;
  } else if (key == "ranks") {
    auto r = parse_ranks(v);
    DP_TRY(r);
    s.ranks = std::move(*r);
  } else if (key == "workers") {
    if (v != "watch" && v != "none") return bad("workers: watch|none");
    s.watch_workers = v == "watch";
  } else if (key == "store") {
    if (v != "step" && v != "none") return bad("store: step|none");
    s.serve_store = v == "step";
  } else if (key == "on_failure") {
    if (v != "end" && v != "keep") return bad("on_failure: end|keep");
    s.keep_survivors = v == "keep";
  } else if (key == "held_ports") {
    auto held = parse_held_ports(v);
    DP_TRY(held);
    s.held_ports = std::move(*held);
  } else if (key == "ports") {
    auto ports = parse_ports_text(v, "ports");
    DP_TRY(ports);
    s.published.ports = std::move(*ports);
  } else if (key == "master") {
    if (v == "none") s.master = MasterPort::none;
    else if (v == "publish") s.master = MasterPort::publish;
    else if (v == "fetch") s.master = MasterPort::fetch;
    else return bad("master: none|publish|fetch");
  } else {
    long long lo = 0, hi = UINT32_MAX;
    if (key == "world") lo = 1, hi = INT32_MAX;
    else if (key == "port_wait_ms" || key == "kill_grace_ms" || key == "heartbeat_timeout_ms")
      hi = 86'400'000;
    else if (key == "master_port") lo = 1, hi = 65535;
    else if (key != "job" && key != "step") return bad("unknown key '" + std::string(key) + "'");
    auto n = number(lo, hi);
    DP_TRY(n);
    if (key == "world") s.world_size = static_cast<int>(*n);
    else if (key == "port_wait_ms") s.port_wait = std::chrono::milliseconds(*n);
    else if (key == "kill_grace_ms") s.kill_grace = std::chrono::milliseconds(*n);
    else if (key == "heartbeat_timeout_ms") s.heartbeat_timeout = std::chrono::milliseconds(*n);
    else if (key == "master_port") s.published = static_cast<int>(*n);
    else (key == "job" ? s.job : s.step) = static_cast<uint32_t>(*n);
  }
  return {};
}

}  // namespace

std::string format_settings(const AgentSettings& s) {
  std::string ranks;
  for (int32_t r : s.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  const char* master = s.master == MasterPort::publish ? "publish"
                       : s.master == MasterPort::fetch ? "fetch"
                                                       : "none";
  auto clean = [](std::string v) {
    std::replace(v.begin(), v.end(), '\n', ' ');
    return v;
  };
  std::string published;
  if (s.master == MasterPort::publish) {
    if (const auto& f = s.published.failure)
      published = "master_failure_node=" + clean(f->node) +
                  "\nmaster_failure_reason=" + clean(f->reason) + "\n";
    else
      published = "master_port=" + std::to_string(s.published.port) +
                  "\nports=" + ports_text(s.published.ports) + "\n";
  }
  return "addr=" + clean(s.addr) + "\nsecret=" + clean(s.secret) + "\nhost=" + clean(s.host) +
         "\njob=" + std::to_string(s.job) + "\nstep=" + std::to_string(s.step) +
         "\nworld=" + std::to_string(s.world_size) + "\nranks=" + ranks + "\nmaster=" + master +
         "\n" + published + "port_wait_ms=" + std::to_string(s.port_wait.count()) +
         "\nkill_grace_ms=" + std::to_string(s.kill_grace.count()) +
         "\nheartbeat_timeout_ms=" + std::to_string(s.heartbeat_timeout.count()) +
         "\non_failure=" + (s.keep_survivors ? "keep" : "end") +
         "\nworkers=" + (s.watch_workers ? "watch" : "none") +
         "\nstore=" + (s.serve_store ? "step" : "none") +
         "\nheld_ports=" + ports_text(s.held_ports) + "\n\n";
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
  if (s.addr.empty() || s.secret.empty() || s.host.empty() || s.ranks.empty() || s.world_size < 1)
    return bad("addr, secret, host, world and ranks are required");
  if (s.ranks.back() >= s.world_size) return bad("a rank outside the world");
  if (s.master == MasterPort::publish) {
    const auto& f = s.published.failure;
    if (f ? f->node.empty() : s.published.port < 1)
      return bad("master=publish needs master_port, or master_failure_node and its reason");
  }
  return s;
}

std::string format_answer(const Result<AgentAnswer>& a) {
  auto one_line = [](std::string v) {
    std::replace(v.begin(), v.end(), '\n', ' ');
    return v;
  };
  if (!a) return "ERROR " + one_line(a.error().message) + "\n";
  if (!a->refusal.empty()) return "ERROR " + one_line(a->refusal) + "\n";
  if (const auto& f = a->master_failure) {
    std::string node = one_line(f->node);
    std::replace(node.begin(), node.end(), ' ', '_');
    return "MASTER_FAILED " + node + " " + one_line(f->reason) + "\n";
  }
  std::string store;
  if (a->store_port > 0) store = " store=" + std::to_string(a->store_port);
  if (!a->ports.empty()) store += " ports=" + ports_text(a->ports);
  return "READY " + std::to_string(a->port) + " " + a->socket + store + "\n";
}

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
  line.remove_prefix(failed ? 14 : 6);
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return wrong();
  if (failed) {
    const std::string_view node = line.substr(0, sp), reason = line.substr(sp + 1);
    if (node.empty() || node.size() > 255 || !std::all_of(line.begin(), line.end(), printable))
      return wrong();
    AgentAnswer a;
    a.master_failure = MasterFailure{std::string(node), std::string(reason)};
    return a;
  }
  auto port = parse_whole_number(line.substr(0, sp), 0, 65535);
  std::string_view name = line.substr(sp + 1);
  // " ports=<a,b,...>": the step's --dp-ports, fetched from the master node.
  Result<std::vector<int>> ports = std::vector<int>();
  if (const size_t at = name.find(" ports="); at != std::string_view::npos) {
    ports = parse_ports_text(name.substr(at + 7), "ports");
    if (ports && ports->empty()) return wrong();
    name = name.substr(0, at);
  }
  // " store=<port>": the node's PyTorch store (settings store=step).
  Result<long long> store = 0;
  if (const size_t at = name.find(" store="); at != std::string_view::npos) {
    store = parse_whole_number(name.substr(at + 7), 1, 65535);
    name = name.substr(0, at);
  }
  if (!port || !store || !ports || name.size() < 2 || name.size() > kMaxSocketName ||
      name[0] != '@' || !std::all_of(name.begin() + 1, name.end(), socket_char))
    return wrong();
  AgentAnswer a;
  a.port = static_cast<int>(*port);
  a.socket = std::string(name);
  a.store_port = static_cast<int>(*store);
  a.ports = std::move(*ports);
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
