#include "dp/restart_machine.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <string_view>

#include "dp/duration_text.hpp"

namespace dp {

using Kind = RestartMachine::Command::Kind;

const char* RestartMachine::phase_name(Phase p) noexcept {
  switch (p) {
    case Phase::running: return "running";
    case Phase::stopping: return "stopping";
    case Phase::fencing: return "fencing";
    case Phase::starting: return "starting";
  }
  return "?";
}

// The only place the phase changes.
void RestartMachine::to(Phase next, const std::string& why) {
  lines_.push_back("restart generation " + std::to_string(generation_) + ": " + phase_name(phase_) +
                   " -> " + phase_name(next) + " (" + why + ")");
  phase_ = next;
}

namespace {

void append(RestartMachine::Commands& out, RestartMachine::Commands more) {
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

std::string node_list(const std::set<int>& nodes) {
  std::string out;
  for (int n : nodes) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out.empty() ? "-" : out;
}

}  // namespace

// An event that changes something, as a line of its own: with the lines it
// leads to, a log a fresh machine replays.
void RestartMachine::event(Time now, const std::string& what) {
  lines_.push_back("restart event +" + std::to_string(since_origin(now)) + ": " + what);
}

int64_t RestartMachine::since_origin(Time t) {
  if (!origin_) {
    origin_ = t;
    lines_.push_back("restart machine: bound " + ms_text(bound_));
  }
  return std::chrono::duration_cast<std::chrono::microseconds>(t - *origin_).count();
}

std::vector<std::string> RestartMachine::take_lines() {
  std::vector<std::string> out(lines_.begin() + static_cast<std::ptrdiff_t>(taken_), lines_.end());
  taken_ = lines_.size();
  return out;
}

int RestartMachine::fenced_node(uint64_t link) const noexcept {
  if (link == 0) return -1;
  for (const auto& [node, f] : fences_)
    if (f.link == link) return node;
  return -1;
}

RestartMachine::Commands RestartMachine::fence(int node, Fence f, Time now) {
  since_origin(now);  // the origin is the first event's time, never a deadline's
  event(now, "fence node=" + std::to_string(node) + " link=" + std::to_string(f.link) +
                 " dead_by=" + std::to_string(since_origin(f.dead_by)) + " host=" + f.host +
                 " how=" + f.how);
  Commands out;
  if (f.link != 0) out.push_back({Kind::fence, node, generation_ + 1, f.link, {}});
  fences_[node] = std::move(f);
  append(out, settle(now));
  return out;
}

RestartMachine::Commands RestartMachine::begin(const std::set<int>& live_nodes, Time now,
                                               const std::string& why) {
  event(now, "begin live=" + node_list(live_nodes) + " why=" + why);
  ++generation_;
  to(Phase::stopping, why);
  waiting_ = live_nodes;
  deadline_ = now + bound_;
  Commands out;
  for (int node : waiting_) out.push_back({Kind::stop, node, generation_, 0, {}});
  if (waiting_.empty()) append(out, try_start());
  return out;
}

// Never a START while a lost node's programs may still run (a spare beside
// them: two generations, two writers of a checkpoint).
RestartMachine::Commands RestartMachine::try_start() {
  if (!fences_.empty()) {
    if (phase_ != Phase::fencing) {
      std::string hosts;
      for (const auto& [node, f] : fences_) hosts += (hosts.empty() ? "" : ", ") + f.host;
      to(Phase::fencing, "every live node stopped; waiting for " + hosts + "'s programs' end");
    }
    return {};
  }
  return {{Kind::start, -1, generation_, 0, {}}};
}

RestartMachine::Commands RestartMachine::starting(const std::set<int>& nodes, Time now) {
  event(now, "starting nodes=" + node_list(nodes));
  to(Phase::starting, "every program stopped");
  waiting_ = nodes;
  deadline_ = now + bound_;
  return waiting_.empty() ? phase_done() : Commands{};
}

RestartMachine::Commands RestartMachine::phase_done() {
  if (phase_ == Phase::stopping) return try_start();
  if (phase_ != Phase::starting) return {};
  to(Phase::running, "every node started its programs");
  return {{Kind::running, -1, generation_, 0, {}}};
}

RestartMachine::Commands RestartMachine::stopped(int node, uint64_t generation, Time now) {
  return answered(Phase::stopping, "stopped", node, generation, now);
}

RestartMachine::Commands RestartMachine::started(int node, uint64_t generation, Time now) {
  return answered(Phase::starting, "started", node, generation, now);
}

// A late answer (or one not waited for) changes nothing.
RestartMachine::Commands RestartMachine::answered(Phase of, const char* what, int node,
                                                  uint64_t generation, Time now) {
  if (phase_ != of || generation != generation_ || !waiting_.count(node)) return {};
  event(now,
        std::string(what) + " node=" + std::to_string(node) + " gen=" + std::to_string(generation));
  return answer(node);
}

RestartMachine::Commands RestartMachine::left(int node, Time now) {
  if (!waiting_.count(node)) return {};
  event(now, "left node=" + std::to_string(node));
  return answer(node);
}

RestartMachine::Commands RestartMachine::answer(int node) {
  waiting_.erase(node);
  return waiting_.empty() ? phase_done() : Commands{};
}

RestartMachine::Commands RestartMachine::fence_answered(int node, Time now) {
  auto it = fences_.find(node);
  if (it == fences_.end()) return {};
  event(now, "fence_answered node=" + std::to_string(node));
  it->second.dead_by = now;
  it->second.how = "its agent said so";
  return settle(now);
}

RestartMachine::Commands RestartMachine::fence_link_closed(int node, Time now,
                                                           std::chrono::milliseconds reaction) {
  auto it = fences_.find(node);
  if (it == fences_.end()) return {};
  event(now, "fence_link_closed node=" + std::to_string(node) +
                 " reaction=" + std::to_string(reaction.count()));
  it->second.link = 0;
  if (now + reaction < it->second.dead_by) {
    it->second.dead_by = now + reaction;
    it->second.how = "its agent's link closed";
  }
  return {};
}

RestartMachine::Commands RestartMachine::settle(Time now) {
  Commands out;
  for (auto it = fences_.begin(); it != fences_.end();) {
    if (now < it->second.dead_by) {
      ++it;
      continue;
    }
    if (it->second.link != 0) out.push_back({Kind::close_link, it->first, 0, it->second.link, {}});
    lines_.push_back(it->second.host + "'s programs are dead: " + it->second.how);
    it = fences_.erase(it);
  }
  if (phase_ == Phase::fencing && fences_.empty()) append(out, try_start());
  return out;
}

RestartMachine::Commands RestartMachine::tick(Time now) {
  bool due =
      phase_ != Phase::running && phase_ != Phase::fencing && now >= deadline_ && !waiting_.empty();
  for (const auto& [node, f] : fences_) due = due || now >= f.dead_by;
  if (!due) return {};  // nothing to log, nothing to do
  event(now, "tick");
  Commands out = settle(now);
  if (phase_ == Phase::running || phase_ == Phase::fencing || now < deadline_) return out;
  // A node agent that neither stopped nor started its programs in time is lost.
  const std::string what = phase_ == Phase::stopping ? "stop" : "start";
  for (int node : waiting_)
    out.push_back({Kind::lose, node, generation_, 0,
                   "its node agent did not " + what + " its programs within " + ms_text(bound_) +
                       " of the restart"});
  return out;
}

}  // namespace dp

namespace dp {
namespace {

// "k=v k=v ...": the key `rest_key` takes the rest of the line, spaces and all.
std::map<std::string, std::string> fields(const std::string& text, const std::string& rest_key) {
  std::map<std::string, std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t eq = text.find('=', at);
    if (eq == std::string::npos) break;
    const std::string key = text.substr(at, eq - at);
    const size_t end = key == rest_key ? text.size() : std::min(text.find(' ', eq), text.size());
    out[key] = text.substr(eq + 1, end - eq - 1);
    at = end + 1;
  }
  return out;
}

std::optional<int64_t> number(const std::map<std::string, std::string>& f, const char* key) {
  auto it = f.find(key);
  if (it == f.end() || it->second.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    return used == it->second.size() ? std::optional<int64_t>(v) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::set<int>> nodes_of(const std::map<std::string, std::string>& f,
                                      const char* key) {
  auto it = f.find(key);
  if (it == f.end()) return std::nullopt;
  std::set<int> out;
  if (it->second == "-") return out;
  size_t at = 0;
  while (at <= it->second.size()) {
    const size_t comma = std::min(it->second.find(',', at), it->second.size());
    const auto n = number({{"n", it->second.substr(at, comma - at)}}, "n");
    if (!n) return std::nullopt;
    out.insert(static_cast<int>(*n));
    at = comma + 1;
  }
  return out;
}

constexpr std::string_view kBound = "restart machine: bound ";
constexpr std::string_view kEvent = "restart event +";

// One logged event applied to the machine; else why it is not one.
std::optional<std::string> apply_event(RestartMachine& m, const std::string& name,
                                       const std::map<std::string, std::string>& f,
                                       RestartMachine::Time t, RestartMachine::Time origin) {
  using std::chrono::microseconds;
  const auto node = number(f, "node");
  if (name == "begin") {
    const auto live = nodes_of(f, "live");
    if (!live || !f.count("why")) return "begin without live= or why=";
    m.begin(*live, t, f.at("why"));
  } else if (name == "starting") {
    const auto nodes = nodes_of(f, "nodes");
    if (!nodes) return "starting without nodes=";
    m.starting(*nodes, t);
  } else if (name == "tick") {
    m.tick(t);
  } else if (!node) {
    return "no node=";
  } else if (name == "fence") {
    const auto link = number(f, "link"), by = number(f, "dead_by");
    if (!link || !by || !f.count("host") || !f.count("how")) return "a fence's field missing";
    m.fence(static_cast<int>(*node),
            {static_cast<uint64_t>(*link), f.at("host"), f.at("how"), origin + microseconds(*by)},
            t);
  } else if (name == "stopped" || name == "started") {
    const auto gen = number(f, "gen");
    if (!gen) return "no gen=";
    if (name == "stopped") m.stopped(static_cast<int>(*node), static_cast<uint64_t>(*gen), t);
    else m.started(static_cast<int>(*node), static_cast<uint64_t>(*gen), t);
  } else if (name == "left") {
    m.left(static_cast<int>(*node), t);
  } else if (name == "fence_answered") {
    m.fence_answered(static_cast<int>(*node), t);
  } else if (name == "fence_link_closed") {
    const auto reaction = number(f, "reaction");
    if (!reaction) return "no reaction=";
    m.fence_link_closed(static_cast<int>(*node), t, std::chrono::milliseconds(*reaction));
  } else {
    return "unknown event '" + name + "'";
  }
  return std::nullopt;
}

}  // namespace

Result<ReplayedLog> replay_restart_log(const std::vector<std::string>& log) {
  using std::chrono::microseconds;
  ReplayedLog out;
  std::optional<RestartMachine> m;
  // Far from the clock's zero: a fence's dead_by may lie before the origin.
  const RestartMachine::Time origin = RestartMachine::Time{} + std::chrono::hours(24);
  for (size_t i = 0; i < log.size(); ++i) {
    const std::string& line = log[i];
    auto bad = [&](const std::string& why) {
      return make_error(Errc::invalid_argument,
                        "restart log line " + std::to_string(i + 1) + ": " + why + ": " + line);
    };
    out.recorded.push_back(line);
    if (line.rfind(kBound, 0) == 0) {
      if (m) return bad("a second machine");
      m.emplace(std::chrono::milliseconds(std::atoll(line.c_str() + kBound.size())));
      continue;
    }
    if (line.rfind(kEvent, 0) != 0) {
      if (line.rfind("restart generation ", 0) == 0 ||
          line.find("'s programs are dead: ") != std::string::npos)
        continue;  // a result: the replay makes its own
      return bad("neither an event nor a result of the restart machine");
    }
    if (!m) return bad("an event before the machine's bound");
    const size_t colon = line.find(": ", kEvent.size());
    if (colon == std::string::npos) return bad("no ': ' after the time");
    const auto t = origin + microseconds(std::atoll(line.c_str() + kEvent.size()));
    const size_t space = std::min(line.find(' ', colon + 2), line.size());
    const std::string name = line.substr(colon + 2, space - colon - 2);
    const std::string rest = space < line.size() ? line.substr(space + 1) : "";
    const auto f = fields(rest, name == "begin" ? "why" : "how");
    if (auto why = apply_event(*m, name, f, t, origin)) return bad(*why);
  }
  if (m) out.replayed = m->lines();
  return out;
}

}  // namespace dp
