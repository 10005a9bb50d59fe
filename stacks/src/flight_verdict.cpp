// The step's verdicts from its ranks' flight recorders (flight_recorder.hpp):
// the hang, and who the others wait for.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "dp/shown_value.hpp"
#include "dp/stacks/flight_recorder.hpp"
#include "dp/stacks/merge.hpp"

namespace dp::stacks {
namespace {

// A dump is the rank's own text (its collectives' and groups' names): shown
// escaped wherever it becomes a line of ours (dp/shown_value.hpp), an op as
// an identifier holds it, so no dump can forge a slurm-dp: line.
std::string op_text(const std::string& op) { return shown_name(op, kShownNameBytes); }
std::string group_text(const std::string& group) { return shown_value(group, kShownNameBytes); }

struct Member {
  const RankFlight* rank;
  const GroupPlace* place;
};

std::string who(const RankFlight& r) {
  return std::to_string(r.rank) + " (" + (r.host.empty() ? "?" : r.host) +
         (r.pid > 0 ? ", pid " + std::to_string(r.pid) : "") + ")";
}

// "rank 1 (n2, pid 4242)", "ranks 1 (n2, pid 4242), 5 (n3, pid 7)": the first 8, then a count.
std::string named(const std::vector<const RankFlight*>& rs) {
  std::string s = rs.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < rs.size() && i < 8; ++i) s += (i ? ", " : "") + who(*rs[i]);
  if (rs.size() > 8) s += ", ... (" + std::to_string(rs.size()) + " ranks)";
  return s;
}

// "ranks 0, 2, 3": the first 8, then a count.
std::string numbers(const std::vector<int>& rs) {
  std::string s = rs.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < rs.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(rs[i]);
  if (rs.size() > 8) s += ", ... (" + std::to_string(rs.size()) + " ranks)";
  return s;
}

struct Candidate {
  std::string group;
  int64_t top = -1;
  int64_t waited_ms = -1;
  std::string op;
  std::vector<const RankFlight*> behind;
  std::vector<int> waiting;
  std::vector<int64_t> behind_at;
  std::vector<int> unread;
};

std::optional<Candidate> judge_group(const std::string& name, const std::vector<Member>& ms,
                                     const std::set<int>& read, int64_t timeout_ms) {
  Candidate c;
  c.group = name;
  for (const auto& m : ms) c.top = std::max(c.top, m.place->last_enqueued);
  std::set<int> members;
  for (const auto& m : ms) {
    const GroupPlace& p = *m.place;
    members.insert(p.ranks.begin(), p.ranks.end());
    if (p.last_enqueued == c.top && p.pending && p.age_ms >= timeout_ms) {
      c.waiting.push_back(m.rank->rank);
      c.waited_ms = c.waited_ms < 0 ? p.age_ms : std::min(c.waited_ms, p.age_ms);
      c.op = p.op;
    } else if (p.last_enqueued < c.top && (p.age_ms < 0 || p.age_ms >= timeout_ms)) {
      c.behind.push_back(m.rank);
      c.behind_at.push_back(p.last_enqueued);
    } else {
      return std::nullopt;  // a member moved within the timeout, or the group is idle
    }
  }
  if (c.waiting.empty() || c.behind.empty()) return std::nullopt;
  for (int r : members)
    if (!read.count(r)) c.unread.push_back(r);
  return c;
}

std::string hang_message(const Candidate& c, const std::vector<RankFlight>& ranks) {
  std::string m = named(c.behind) + " never entered " + op_text(c.op) + " #" +
                  std::to_string(c.top) + " (process group " + group_text(c.group) + "); " +
                  numbers(c.waiting) + (c.waiting.size() == 1 ? " waits" : " wait") +
                  " in it for " + std::to_string((c.waited_ms + 500) / 1000) + " s";
  std::string at;
  for (size_t i = 0; i < c.behind.size() && i < 8; ++i)
    at += (i ? ", rank " : "rank ") + std::to_string(c.behind[i]->rank) + " is at #" +
          std::to_string(c.behind_at[i]);
  m += " (" + at + ")";
  if (!c.unread.empty()) {
    std::string why;
    for (const auto& r : ranks)
      if (r.rank == c.unread.front() && !r.unread.empty()) why = ": " + r.unread;
    m += "; " + numbers(c.unread) + " not read (no flight recorder" + why + ")";
  }
  return shown_value(m, kShownLineBytes);
}

}  // namespace

std::optional<FlightHang> flight_hang(const std::vector<RankFlight>& ranks,
                                      std::chrono::milliseconds timeout) {
  std::map<std::string, std::vector<Member>> groups;
  std::set<int> read;
  for (const auto& r : ranks) {
    if (!r.unread.empty()) continue;
    read.insert(r.rank);
    for (const auto& g : r.groups) groups[g.group].push_back(Member{&r, &g});
  }
  std::optional<Candidate> best;
  for (const auto& [name, members] : groups) {
    auto c = judge_group(name, members, read, timeout.count());
    if (c && (!best || c->waited_ms > best->waited_ms)) best = std::move(c);
  }
  if (!best) return std::nullopt;
  FlightHang h;
  h.rank = best->behind.front()->rank;
  h.host = best->behind.front()->host;
  h.which = "pg " + group_text(best->group) + " #" + std::to_string(best->top);
  h.message = hang_message(*best, ranks);
  return h;
}

std::vector<std::string> flight_lines(const std::vector<RankFlight>& ranks) {
  // group -> place text -> ranks; why -> ranks
  std::map<std::string, std::map<std::string, std::vector<int>>> places;
  std::map<std::string, std::vector<int>> unread;
  for (const auto& r : ranks) {
    if (!r.unread.empty()) {
      unread[r.unread].push_back(r.rank);
      continue;
    }
    for (const auto& g : r.groups) {
      // "~" stands for wait or waits, which the count of ranks decides.
      const std::string at =
          g.pending ? "~ in " + op_text(g.op) + " #" + std::to_string(g.last_enqueued) + " for " +
                          std::to_string((g.age_ms + 500) / 1000) + " s"
                    : "done #" + std::to_string(g.last_enqueued) + " (" + op_text(g.op) + ")";
      places[g.group][at].push_back(r.rank);
    }
  }
  std::vector<std::string> lines;
  for (auto& [group, at] : places) {
    std::string line = "flight recorder, process group " + group_text(group) + ":";
    bool first = true;
    for (auto& [text, rs] : at) {
      std::sort(rs.begin(), rs.end());
      std::string place = text;
      if (place[0] == '~') place.replace(0, 1, rs.size() == 1 ? "waits" : "wait");
      line += std::string(first ? " " : "; ") + (rs.size() == 1 ? "rank " : "ranks ") +
              rank_ranges(rs) + " " + place;
      first = false;
    }
    lines.push_back(shown_value(line, kShownLineBytes));
  }
  for (auto& [why, rs] : unread) {
    std::sort(rs.begin(), rs.end());
    lines.push_back(shown_value(
        "flight recorder not read: " + std::string(rs.size() == 1 ? "rank " : "ranks ") +
            rank_ranges(rs) + " (" + why + ")",
        kShownLineBytes));
  }
  return lines;
}

namespace {

struct Seen {
  int rank;
  const Arrival* a;
};

// Each rank's wait in one collective (ms): its GPU time over the shortest
// where all were timed, else from its enqueue to the last one's.
std::vector<double> waits_in(const std::vector<Seen>& seen) {
  const bool timed = std::all_of(seen.begin(), seen.end(),
                                 [](const Seen& s) { return s.a->duration_ms.has_value(); });
  std::vector<double> out;
  if (timed) {
    double least = *seen[0].a->duration_ms;
    for (const auto& s : seen) least = std::min(least, *s.a->duration_ms);
    for (const auto& s : seen) out.push_back(*s.a->duration_ms - least);
  } else {
    int64_t last = seen[0].a->created_ns;
    for (const auto& s : seen) last = std::max(last, s.a->created_ns);
    for (const auto& s : seen) out.push_back(static_cast<double>(last - s.a->created_ns) / 1e6);
  }
  return out;
}

// One collective's lateness: who came last (waited least) and what the others waited.
void judge_collective(const std::vector<Seen>& seen, std::map<int, LateRank>& by_rank) {
  const auto waits = waits_in(seen);
  size_t last = 0;
  double late_ms = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (waits[i] < waits[last]) last = i;
    late_ms += waits[i];
  }
  for (const auto& s : seen) by_rank[s.rank].seen++;
  LateRank& l = by_rank[seen[last].rank];
  l.last++;
  l.late_ms += late_ms;
}

}  // namespace

std::vector<LateRank> late_ranks(const std::vector<RankFlight>& ranks) {
  std::map<std::pair<std::string, int64_t>, std::vector<Seen>> collectives;
  std::map<int, std::string> host;
  for (const auto& r : ranks) {
    if (!r.unread.empty()) continue;
    host[r.rank] = r.host;
    for (const auto& a : r.arrivals) collectives[{a.group, a.seq}].push_back(Seen{r.rank, &a});
  }
  std::map<int, LateRank> by_rank;
  for (const auto& [key, seen] : collectives)
    if (seen.size() >= 2) judge_collective(seen, by_rank);
  std::vector<LateRank> out;
  for (auto& [rank, l] : by_rank) {
    if (l.last == 0) continue;
    l.rank = rank;
    l.host = host[rank];
    out.push_back(l);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const LateRank& a, const LateRank& b) { return a.late_ms > b.late_ms; });
  return out;
}

std::vector<WaitShare> flight_wait_shares(const std::vector<RankFlight>& ranks, int64_t from_ns,
                                          int64_t to_ns) {
  std::map<std::pair<std::string, int64_t>, std::vector<Seen>> collectives;
  std::map<int, WaitShare> by_rank;
  for (const auto& r : ranks) {
    if (!r.unread.empty()) continue;
    for (const auto& a : r.arrivals) collectives[{a.group, a.seq}].push_back(Seen{r.rank, &a});
    by_rank[r.rank].host = r.host;
  }
  const double span_ms = static_cast<double>(std::max<int64_t>(to_ns - from_ns, 1)) / 1e6;
  for (const auto& [key, seen] : collectives) {
    // A collective is the block's where its first rank enqueued it: a late
    // rank's arrival stays with the others' (a collective is never split).
    const auto first = std::min_element(seen.begin(), seen.end(), [](const Seen& a, const Seen& b) {
      return a.a->created_ns < b.a->created_ns;
    });
    if (seen.size() < 2 || first->a->created_ns < from_ns || first->a->created_ns >= to_ns)
      continue;
    const auto waits = waits_in(seen);
    for (size_t i = 0; i < seen.size(); ++i) {
      WaitShare& w = by_rank[seen[i].rank];
      w.waiting += waits[i] / span_ms;
      w.collectives++;
    }
  }
  std::vector<WaitShare> out;
  for (auto& [rank, w] : by_rank) {
    if (w.collectives == 0) continue;
    w.rank = rank;
    w.waiting = std::clamp(w.waiting, 0.0, 1.0);
    out.push_back(w);
  }
  return out;
}

std::string late_text(const LateRank& r) {
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f", r.late_ms);
  return "rank " + std::to_string(r.rank) + " (" + (r.host.empty() ? "?" : r.host) + ") entered " +
         std::to_string(r.last) + " of " + std::to_string(r.seen) +
         " collectives last, the others waited " + ms + " ms for it in all";
}

}  // namespace dp::stacks
