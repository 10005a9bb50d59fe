#include "dp/stacks/flight_recorder.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "dp/list_text.hpp"
#include "dp/pickle.hpp"

namespace dp::stacks {
namespace {

using pickle::Document;
using pickle::Kind;
using pickle::Node;

constexpr size_t kMostEntries = 1u << 20;  // PyTorch's buffer is 2 000 by default
constexpr size_t kMostGroups = 1u << 16;
constexpr size_t kMostRanks = 1u << 22;

std::optional<int64_t> int_of(const Node* n) {
  if (!n || (n->kind != Kind::integer && n->kind != Kind::boolean)) return std::nullopt;
  return n->integer;
}

std::string text_of(const Node* n) { return n && n->kind == Kind::text ? n->text : std::string(); }

// pg_config's "ranks": a text "[0, 1]" as PyTorch writes it, or a list.
std::vector<int> ranks_of(const Document& d, const Node* n) {
  std::vector<int> out;
  if (!n) return out;
  if (n->kind == Kind::list) {
    for (uint32_t i : n->items)
      if (auto v = int_of(&d.at(i)); v && *v >= 0 && *v < INT32_MAX && out.size() < kMostRanks)
        out.push_back(static_cast<int>(*v));
    return out;
  }
  long long v = -1;
  for (char c : text_of(n)) {
    if (c >= '0' && c <= '9') {
      v = (v < 0 ? 0 : v) * 10 + (c - '0');
      if (v > INT32_MAX) return {};
    } else if (v >= 0) {
      if (out.size() >= kMostRanks) return {};
      out.push_back(static_cast<int>(v));
      v = -1;
    }
  }
  if (v >= 0 && out.size() < kMostRanks) out.push_back(static_cast<int>(v));
  return out;
}

std::optional<FlightEntry> entry_of(const Document& d, const Node& e) {
  if (e.kind != Kind::dict) return std::nullopt;
  FlightEntry f;
  const Node* pg = d.get(e, "process_group");
  if (pg && pg->kind == Kind::list && !pg->items.empty()) {
    f.group = text_of(&d.at(pg->items[0]));
  } else if (auto id = int_of(d.get(e, "pg_id"))) {
    f.group = std::to_string(*id);
  }
  f.p2p = int_of(d.get(e, "is_p2p")).value_or(0) != 0;
  const auto seq = int_of(d.get(e, f.p2p ? "p2p_seq_id" : "collective_seq_id"));
  if (!seq) return std::nullopt;
  f.seq = *seq;
  f.op = text_of(d.get(e, "profiling_name"));
  if (const size_t colon = f.op.find(':'); colon != std::string::npos) f.op.erase(0, colon + 1);
  f.state = text_of(d.get(e, "state"));
  f.created_ns = int_of(d.get(e, "time_created_ns")).value_or(0);
  f.completed_ns = int_of(d.get(e, "time_discovered_completed_ns"));
  if (const Node* ms = d.get(e, "duration_ms"); ms && ms->kind == Kind::real)
    f.duration_ms = ms->real;
  return f;
}

FlightGroup& group_named(std::vector<FlightGroup>& groups, const std::string& name) {
  for (auto& g : groups)
    if (g.name == name) return g;
  groups.push_back(FlightGroup{name, "", {}, -1, -1});
  return groups.back();
}

// pg_config and pg_status by group name; a group only the entries name gets
// its counters from them (dumps before pg_status).
Result<void> read_groups(const Document& d, FlightDump& out) {
  std::set<std::string> with_status;
  if (const Node* cfg = d.get(d.root(), "pg_config"); cfg && cfg->kind == Kind::dict) {
    for (size_t i = 0; i + 1 < cfg->items.size() && out.groups.size() < kMostGroups; i += 2) {
      const Node& v = d.at(cfg->items[i + 1]);
      FlightGroup& g = group_named(out.groups, text_of(&d.at(cfg->items[i])));
      g.desc = text_of(d.get(v, "desc"));
      g.ranks = ranks_of(d, d.get(v, "ranks"));
    }
  }
  if (const Node* st = d.get(d.root(), "pg_status"); st && st->kind == Kind::dict) {
    for (size_t i = 0; i + 1 < st->items.size() && out.groups.size() < kMostGroups; i += 2) {
      const Node& v = d.at(st->items[i + 1]);
      const std::string name = text_of(&d.at(st->items[i]));
      FlightGroup& g = group_named(out.groups, name);
      g.last_enqueued = int_of(d.get(v, "last_enqueued_collective")).value_or(-1);
      g.last_completed = int_of(d.get(v, "last_completed_collective")).value_or(-1);
      with_status.insert(name);
    }
  }
  for (const auto& e : out.entries) {
    if (e.p2p || with_status.count(e.group) || out.groups.size() >= kMostGroups) continue;
    FlightGroup& g = group_named(out.groups, e.group);
    g.last_enqueued = std::max(g.last_enqueued, e.seq);
    if (e.state == "completed") g.last_completed = std::max(g.last_completed, e.seq);
  }
  return {};
}

}  // namespace

Result<FlightDump> read_flight_dump(std::string_view pickle_bytes) {
  auto doc = pickle::parse(pickle_bytes);
  DP_TRY(doc);
  const Document& d = *doc;
  if (d.root().kind != Kind::dict)
    return make_error(Errc::protocol, "flight recorder dump: not a dict at its top");
  FlightDump out;
  out.version = text_of(d.get(d.root(), "version"));
  out.comm_version = text_of(d.get(d.root(), "comm_lib_version"));
  const Node* entries = d.get(d.root(), "entries");
  if (!entries || entries->kind != Kind::list)
    return make_error(Errc::protocol, "flight recorder dump (version '" + out.version +
                                          "'): no list 'entries' (is the buffer size 0?)");
  for (uint32_t i : entries->items) {
    if (out.entries.size() >= kMostEntries) break;
    if (auto e = entry_of(d, d.at(i))) out.entries.push_back(std::move(*e));
  }
  DP_TRY(read_groups(d, out));
  return out;
}

std::vector<GroupPlace> group_places(const FlightDump& dump, int64_t dumped_ns) {
  std::vector<GroupPlace> out;
  for (const auto& g : dump.groups) {
    GroupPlace p{g.name,
                 g.desc,
                 g.ranks,
                 g.last_enqueued,
                 g.last_completed,
                 "collective",
                 g.last_enqueued > g.last_completed,
                 -1};
    for (auto e = dump.entries.rbegin(); e != dump.entries.rend(); ++e) {
      if (e->p2p || e->group != g.name || e->seq != g.last_enqueued) continue;
      if (!e->op.empty()) p.op = e->op;
      if (e->created_ns > 0)
        p.age_ms = std::max<int64_t>(0, (dumped_ns - e->created_ns) / 1'000'000);
      break;
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Arrival> recent_arrivals(const FlightDump& dump, size_t most) {
  std::vector<Arrival> out;
  for (auto e = dump.entries.rbegin(); e != dump.entries.rend() && out.size() < most; ++e)
    if (!e->p2p) out.push_back(Arrival{e->group, e->seq, e->op, e->created_ns, e->duration_ms});
  std::reverse(out.begin(), out.end());
  return out;
}

std::optional<std::vector<int>> parse_rank_ranges(std::string_view text, size_t most) {
  auto number = [](std::string_view s, long long& v) {
    if (s.empty() || s.size() > 9) return false;
    v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    return true;
  };
  std::vector<int> out;
  for (std::string_view part : list_items(text)) {
    const size_t dash = part.find('-');
    long long lo = 0, hi = 0;
    if (!number(part.substr(0, dash), lo)) return std::nullopt;
    hi = lo;
    if (dash != std::string_view::npos && !number(part.substr(dash + 1), hi)) return std::nullopt;
    if (hi < lo || out.size() + static_cast<size_t>(hi - lo + 1) > most) return std::nullopt;
    for (long long r = lo; r <= hi; ++r) out.push_back(static_cast<int>(r));
  }
  return out;
}

}  // namespace dp::stacks
