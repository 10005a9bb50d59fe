#include "dp/straggler.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "dp/duration_text.hpp"
#include "dp/rank_ranges.hpp"

namespace dp::straggler {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const RankShare* find(const Block& b, int rank) {
  for (const auto& r : b.ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

// The others' median wait share minus this rank's (`apart`: ranks not
// counted among the others); none when it is alone.
std::optional<double> lead_in(const Block& b, const RankShare& r, const std::set<int>& apart) {
  std::vector<double> others;
  for (const auto& o : b.ranks)
    if (o.rank != r.rank && !apart.count(o.rank)) others.push_back(o.waiting);
  if (others.empty()) return std::nullopt;
  return median(std::move(others)) - r.waiting;
}

std::string percent(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f %%", 100 * std::max(0.0, share));
  return b;
}

std::string ratio_text(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", r);
  return b;
}

// What keeps a straggler behind when it waits on its own work.
std::string waits_on(const std::string& on, bool one) {
  if (on == "input") return one ? "it waits on its DataLoader" : "they wait on their DataLoaders";
  if (on == "file") return one ? "it waits in file reads" : "they wait in file reads";
  if (on == "sleep") return one ? "it sleeps" : "they sleep";
  return one ? "it waits on its own work" : "they wait on their own work";
}

// "rank 3 (n2)", "ranks 2-3 (n2)", "ranks 1,3 (n1, n2)".
std::string who(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  std::string h;
  for (const auto& x : hosts) h += (h.empty() ? "" : ", ") + (x.empty() ? std::string("?") : x);
  return (ranks.size() == 1 ? "rank " : "ranks ") + rank_ranges(ranks) + " (" + h + ")";
}

}  // namespace

const char* change_name(Change c) noexcept {
  switch (c) {
    case Change::named: return "named";
    case Change::changed: return "changed";
    case Change::recovered: return "recovered";
  }
  return "?";
}

Watch::Watch(Settings s) : s_(s) {}

Watch::Lead Watch::lead_of(int rank, const std::set<int>& apart) const {
  Lead out;
  std::vector<double> leads;
  bool run = true;  // still inside the newest run of near blocks
  out.since_s = window_.empty() ? 0 : window_.back().end_s;
  for (auto b = window_.rbegin(); b != window_.rend(); ++b) {
    const RankShare* r = find(*b, rank);
    const auto lead = r ? lead_in(*b, *r, apart) : std::nullopt;
    if (!lead) {
      run = false;
      continue;
    }
    leads.push_back(*lead);
    const bool near = *lead >= s_.threshold / 2;
    out.near += near ? 1 : 0;
    out.over += *lead >= s_.threshold ? 1 : 0;
    if (run && near) out.since_s = b->end_s - b->seconds;
    run = run && near;
  }
  out.blocks = static_cast<int>(leads.size());
  out.median = median(std::move(leads));
  return out;
}

bool Watch::suspected() const {
  if (window_.empty()) return false;
  for (const auto& r : window_.back().ranks) {
    const Lead l = lead_of(r.rank);
    if (l.blocks >= 2 && l.median >= s_.threshold / 2) return true;
  }
  return false;
}

std::vector<int> Watch::stragglers(size_t judged) const {
  std::vector<int> out;
  if (window_.empty()) return out;
  std::set<std::string> hosts;
  for (const auto& r : window_.back().ranks) {
    const Lead l = lead_of(r.rank);
    if (l.blocks >= s_.min_blocks && l.median >= s_.threshold && l.near >= l.blocks - 1) {
      out.push_back(r.rank);
      hosts.insert(r.host);
    }
  }
  // A straggler's node-mate that lags the rest consistently, by half the
  // threshold, is the node's, named with it: judged against the ranks that
  // are not stragglers.
  const std::set<int> slow(out.begin(), out.end());
  for (const auto& r : window_.back().ranks) {
    if (!hosts.count(r.host) || slow.count(r.rank)) continue;
    const Lead l = lead_of(r.rank, slow);
    if (l.blocks >= s_.min_blocks && l.median >= s_.threshold / 2 && l.near >= l.blocks - 1)
      out.push_back(r.rank);
  }
  std::sort(out.begin(), out.end());
  // A straggler is the few the many wait for: never half the ranks or more.
  if (out.size() * 2 > judged) out.clear();
  return out;
}

namespace {

// The window's figures, the named ranks' apart from the others'.
struct WindowSplit {
  std::set<std::string> hosts;        // the named ranks'
  std::map<std::string, int> wheres;  // where the others were seen waiting, how often
  // Own waits by what: the named ranks' shares, the others'.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> own;
  std::vector<double> slow_cpu, other_cpu;  // CPU seconds per second, per rank
};

WindowSplit split_window(const std::deque<Block>& window, const std::set<int>& slow) {
  WindowSplit w;
  std::map<int, std::pair<double, double>> cpu;  // rank -> (CPU seconds, seconds)
  for (const auto& b : window) {
    for (const auto& r : b.ranks) {
      if (r.cpu) {
        cpu[r.rank].first += *r.cpu * b.seconds;
        cpu[r.rank].second += b.seconds;
      }
      const std::pair<const char*, double> kinds[] = {{"input", r.own.input},
                                                      {"file", r.own.file},
                                                      {"sleep", r.own.sleep},
                                                      {"other", r.own.other}};
      for (const auto& [kind, share] : kinds)
        (slow.count(r.rank) ? w.own[kind].first : w.own[kind].second).push_back(share);
      if (slow.count(r.rank)) w.hosts.insert(r.host);
      else if (!r.where.empty()) ++w.wheres[r.where];
    }
  }
  for (const auto& [rank, c] : cpu)
    if (c.second > 0) (slow.count(rank) ? w.slow_cpu : w.other_cpu).push_back(c.first / c.second);
  return w;
}

// Who, who waits for them and how much, where, what keeps them, since when.
std::string verdict_line(const Verdict& v) {
  const bool one = v.ranks.size() == 1;
  const std::string waiters = v.others.size() == 1 ? "rank " + rank_ranges(v.others) + " waits"
                                                   : "ranks " + rank_ranges(v.others) + " wait";
  const std::string waits =
      waiters + " for " + (one ? "it " : "them ") + percent(v.lead) + " of the time";
  if (v.change == Change::recovered)
    return who(v.ranks, v.hosts) + " recovered: " + waits + " (a straggler since " +
           seconds_text(v.since_s) + ")";
  std::string line = who(v.ranks, v.hosts) + " \u2014 " + waits;
  if (!v.where.empty()) line += " (in " + v.where + ")";
  if (!v.own_on.empty())
    line += "; " + waits_on(v.own_on, one) + " " + percent(v.own) + " of the time";
  if (v.cpu_ratio)
    line += std::string("; ") + (one ? "it computes " : "they compute ") +
            ratio_text(*v.cpu_ratio) + " the median";
  return line + "; since " + seconds_text(v.since_s);
}

}  // namespace

Verdict Watch::describe(Change c, const std::vector<int>& ranks, double at_s) const {
  Verdict v;
  v.change = c;
  v.ranks = ranks;
  v.at_s = at_s;
  const std::set<int> slow(ranks.begin(), ranks.end());
  WindowSplit w = split_window(window_, slow);
  for (const auto& r : window_.back().ranks)
    if (!slow.count(r.rank)) v.others.push_back(r.rank);
  std::sort(v.others.begin(), v.others.end());
  v.hosts.assign(w.hosts.begin(), w.hosts.end());
  double since = at_s;
  for (int r : ranks) {
    const Lead l = lead_of(r);
    v.lead += l.median / static_cast<double>(ranks.size());
    since = std::min(since, l.since_s);
  }
  v.since_s = c == Change::recovered && named_ ? named_->since_s : since;
  const double others_cpu = median(w.other_cpu);
  if (!w.slow_cpu.empty() && others_cpu > 1e-3) v.cpu_ratio = median(w.slow_cpu) / others_cpu;
  for (const auto& [where, n] : w.wheres)
    if (v.where.empty() || n > w.wheres[v.where]) v.where = where;
  // Waiting on their own work more than the others do: that is what keeps them.
  double most = s_.threshold / 2;
  for (const auto& [kind, shares] : w.own) {
    const double above = median(shares.first) - median(shares.second);
    if (above < most) continue;
    most = above;
    v.own_on = kind;
    v.own = median(shares.first);
  }
  v.line = verdict_line(v);
  return v;
}

std::optional<Verdict> Watch::observe(const Block& b) {
  Block judged{b.end_s, b.seconds, {}};
  std::set<int> seen;
  for (const auto& r : b.ranks) {
    if (r.rank >= 0 && r.looks >= s_.min_looks && r.waiting >= 0 && r.waiting <= 1 &&
        seen.insert(r.rank).second)
      judged.ranks.push_back(r);
  }
  BlockFigures f{b.end_s, b.seconds, 0, -1, 0, judged.ranks};
  std::vector<double> w;
  for (const auto& r : judged.ranks) {
    w.push_back(r.waiting);
    if (f.least_rank < 0 || r.waiting < f.least_waiting) {
      f.least_rank = r.rank;
      f.least_waiting = r.waiting;
    }
  }
  f.median_waiting = median(std::move(w));
  history_.push_back(std::move(f));
  if (history_.size() > kHistory) history_.pop_front();
  window_.push_back(std::move(judged));
  while (window_.size() > static_cast<size_t>(std::max(s_.window, 1))) window_.pop_front();

  const auto slow = stragglers(window_.back().ranks.size());
  std::optional<Verdict> v;
  if (!named_) {
    if (!slow.empty()) v = describe(Change::named, slow, b.end_s);
  } else {
    // A named rank this block did not judge is no news either way. One is
    // still behind until a whole window in which the others' waiting for it
    // stayed low: the median of its leads under half the threshold, and a
    // lead of the whole threshold in one block at most (a burst), as naming
    // it needed the threshold in all blocks but one.
    bool behind = false;
    for (int r : named_->ranks) {
      if (!find(window_.back(), r)) return std::nullopt;
      const Lead l = lead_of(r);
      behind = behind || l.blocks < s_.window || l.median >= s_.threshold / 2 || l.over > 1;
    }
    const bool within =
        std::includes(named_->ranks.begin(), named_->ranks.end(), slow.begin(), slow.end());
    if (slow.empty() && !behind) v = describe(Change::recovered, named_->ranks, b.end_s);
    else if (!slow.empty() && !(behind && within)) v = describe(Change::changed, slow, b.end_s);
  }
  if (!v) return std::nullopt;
  named_ = v->change == Change::recovered ? std::nullopt : v;
  verdicts_.push_back(*v);
  if (verdicts_.size() > kMostVerdicts) verdicts_.pop_front();
  return v;
}

}  // namespace dp::straggler
