#include "straggler_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "report_figure.hpp"

namespace dp::daemon {
namespace {

// Per-rank figures stay in the report's history for steps this small, and
// for the latest blocks (10 min): the report stays a few hundred KiB. Older
// blocks and wider steps keep each block's summary only.
constexpr size_t kRanksInHistory = 64, kBlocksWithRanks = 120;

StragglerReport::Json verdict_json(const straggler::Verdict& v) {
  StragglerReport::Json j{{"at_s", rounded(v.at_s)},
                          {"change", straggler::change_name(v.change)},
                          {"ranks", v.ranks},
                          {"hosts", v.hosts},
                          {"others", v.others},
                          {"lead", rounded(v.lead)},
                          {"cpu_ratio", v.cpu_ratio ? StragglerReport::Json(rounded(*v.cpu_ratio))
                                                    : StragglerReport::Json(nullptr)},
                          {"where", v.where},
                          {"own_on", v.own_on},
                          {"own", rounded(v.own)},
                          {"since_s", rounded(v.since_s)},
                          {"line", v.line}};
  return j;
}

// What the looks saw the rank do over the same block, when its node
// samples: its CPU, and its waits on its own work (an exact source knows
// only its waits in collectives).
void from_looks(const straggler::Block& looks, straggler::RankShare& r) {
  for (const auto& s : looks.ranks) {
    if (s.rank != r.rank) continue;
    r.cpu = s.cpu;
    r.own = s.own;
  }
}

// The shares of the looks between two counts that waited on its own work, by what.
straggler::OwnWaits own_shares(const proto::RankSamples& a, const proto::RankSamples& z,
                               double looks) {
  auto share = [&](uint64_t to, uint64_t from) {
    return static_cast<double>(to - std::min(to, from)) / looks;
  };
  return {share(z.own_input(), a.own_input()), share(z.own_file(), a.own_file()),
          share(z.own_sleep(), a.own_sleep()), share(z.own_other(), a.own_other())};
}

// A dump starts past the collective after the newest the daemon knows of
// its group (held from an earlier dump, or judged): some were never seen.
bool has_gap(const std::vector<stacks::Arrival>& arrivals,
             const std::map<std::pair<std::string, int64_t>, stacks::Arrival>& held,
             const std::map<std::string, int64_t>& judged_seq) {
  std::map<std::string, int64_t> oldest, known;
  for (const auto& a : arrivals) {
    auto [it, added] = oldest.try_emplace(a.group, a.seq);
    if (!added) it->second = std::min(it->second, a.seq);
  }
  for (const auto& [g, seq] : judged_seq) known[g] = seq;
  for (const auto& [key, a] : held) known[key.first] = std::max(known[key.first], key.second);
  return std::any_of(oldest.begin(), oldest.end(), [&](const auto& o) {
    const auto k = known.find(o.first);
    return k != known.end() && o.second > k->second + 1;
  });
}

}  // namespace

const char* StragglerReport::source_name(Source s) noexcept {
  switch (s) {
    case Source::looks: return "looks";
    case Source::collectives: return "collectives";
    case Source::flight: return "flight";
    case Source::kernel: return "kernel";
  }
  return "?";
}

StragglerReport::StragglerReport(straggler::Settings settings, long ticks_per_second,
                                 int world_size)
    : ticks_per_second_(ticks_per_second > 0 ? ticks_per_second : 100),
      max_ranks_(64 * static_cast<size_t>(std::max(world_size, 1)) + 1024),
      by_looks_(settings),
      by_counters_(settings),
      by_flight_(settings),
      by_kernel_(settings) {}

void StragglerReport::on_looks(const proto::RankSamples& s, const std::string& host) {
  // A node agent's ranks are its to name (a launcher's workers carry torch's),
  // but no more of them than the step could hold.
  if (s.rank() < 0 || (looks_.size() >= max_ranks_ && !looks_.count(s.rank()))) return;
  LookState& l = looks_[s.rank()];
  l.host = host;
  // A new process under this rank (a restart): its counts start again.
  if (l.base && l.base->pid() != s.pid()) l.base.reset();
  l.last = s;
  if (!l.base) l.base = s;
}

void StragglerReport::on_counters(int rank, const std::string& host, const proto::Progress& p) {
  CounterState& c = counters_[rank];
  c.host = host;
  c.last = p;
  if (!c.base || c.base->since_first_op_us() > p.since_first_op_us()) c.base = p;
  any_counters_ = true;
}

void StragglerReport::on_where(int rank, std::string where) {
  if (!where.empty()) where_[rank] = std::move(where);
}

// The looks' block, and in `kernel` the same looks by the kernel's word alone.
straggler::Block StragglerReport::looks_block(double end_s, double seconds,
                                              straggler::Block& kernel) {
  straggler::Block b{end_s, seconds, {}};
  kernel = b;
  for (auto& [rank, l] : looks_) {
    if (!l.base || !l.last) continue;
    const proto::RankSamples a = *l.base, z = *l.last;
    l.base = z;
    if (z.looks() <= a.looks() || z.at_ms() <= a.at_ms()) continue;
    straggler::RankShare r;
    r.rank = rank;
    r.host = l.host;
    r.looks = static_cast<double>(z.looks() - a.looks());
    r.waiting = static_cast<double>(z.waiting() - a.waiting()) / r.looks;
    r.cpu = static_cast<double>(z.cpu_ticks() - std::min(z.cpu_ticks(), a.cpu_ticks())) /
            static_cast<double>(ticks_per_second_) /
            (static_cast<double>(z.at_ms() - a.at_ms()) / 1000.0);
    r.own = own_shares(a, z, r.looks);
    if (auto w = where_.find(rank); w != where_.end()) r.where = w->second;
    straggler::RankShare k = r;
    const uint64_t futex = z.futex() - std::min(z.futex(), a.futex()),
                   running = z.running() - std::min(z.running(), a.running());
    // An agent before the frames' word sends no futex count: its waiting is futex.
    k.waiting = z.futex() == 0 ? r.waiting : static_cast<double>(futex) / r.looks;
    k.own = {0, 0, 0, std::max(0.0, 1.0 - k.waiting - static_cast<double>(running) / r.looks)};
    k.where.clear();
    kernel.ranks.push_back(std::move(k));
    b.ranks.push_back(std::move(r));
  }
  return b;
}

straggler::Block StragglerReport::counters_block(double end_s, double seconds,
                                                 const straggler::Block& looks) {
  straggler::Block b{end_s, seconds, {}};
  for (auto& [rank, c] : counters_) {
    if (!c.base || !c.last) continue;
    const proto::Progress a = *c.base, z = *c.last;
    c.base = z;
    if (z.since_first_op_us() <= a.since_first_op_us()) continue;
    straggler::RankShare r;
    r.rank = rank;
    r.host = c.host;
    r.looks = straggler::kExact;
    r.waiting = std::clamp(static_cast<double>(z.wait_us() - std::min(z.wait_us(), a.wait_us())) /
                               static_cast<double>(z.since_first_op_us() - a.since_first_op_us()),
                           0.0, 1.0);
    from_looks(looks, r);
    b.ranks.push_back(std::move(r));
  }
  return b;
}

void StragglerReport::on_flights(const std::vector<stacks::RankFlight>& flights) {
  if (std::none_of(flights.begin(), flights.end(),
                   [](const stacks::RankFlight& f) { return f.unread.empty(); }))
    return;
  ++flight_reads_;
  for (const auto& f : flights) {
    if (!f.unread.empty() || f.arrivals.empty() || f.rank < 0) continue;
    if (flights_.size() >= max_ranks_ && !flights_.count(f.rank)) continue;
    any_flight_ = true;
    FlightState& s = flights_[f.rank];
    if (s.pid != f.pid) s = FlightState{};  // a new process under this rank: its own collectives
    s.host = f.host;
    s.pid = f.pid;
    s.read = flight_reads_;
    // The rank's first dump, or one after a gap (more were enqueued between
    // two reads than a dump brings): held from its oldest on.
    if (s.covered_from == 0 || has_gap(f.arrivals, s.held, judged_seq_)) {
      s.covered_from = std::min_element(f.arrivals.begin(), f.arrivals.end(),
                                        [](const stacks::Arrival& a, const stacks::Arrival& b) {
                                          return a.created_ns < b.created_ns;
                                        })
                           ->created_ns;
      s.held.clear();  // before the gap: never to be seen whole
    }
    for (const auto& a : f.arrivals) {
      const auto judged = judged_seq_.find(a.group);
      if (judged == judged_seq_.end() || a.seq > judged->second)
        s.held[{a.group, a.seq}] = a;  // a later state of the same collective wins
    }
    while (s.held.size() > kMostHeld) {
      auto first = std::min_element(s.held.begin(), s.held.end(), [](const auto& a, const auto& b) {
        return a.second.created_ns < b.second.created_ns;
      });
      s.covered_from = std::max(s.covered_from, first->second.created_ns + 1);
      s.held.erase(first);
    }
  }
}

// The collectives that every rank of the latest read holds whole (with its
// GPU time where the rank times them), since the last block's: the block
// ends at the first enqueue of the oldest collective some rank still lacks
// (a late rank has not enqueued it, or it still runs), which waits for the
// next; it starts where every rank's dumps hold all it enqueued.
straggler::Block StragglerReport::flight_block(double end_s, double seconds,
                                               const straggler::Block& looks) {
  straggler::Block b{end_s, seconds, {}};
  struct Collective {
    int64_t first = INT64_MAX;
    size_t whole = 0;  // ranks that hold it (timed, where they time)
  };
  std::map<std::pair<std::string, int64_t>, Collective> collectives;
  std::map<std::string, std::set<int>> holders;  // per group, the ranks that hold any of it
  std::vector<stacks::RankFlight> ranks;
  int64_t from = flight_judged_to_;
  for (const auto& [rank, s] : flights_) {
    if (s.read != flight_reads_ || s.held.empty()) continue;
    const bool timed = std::any_of(s.held.begin(), s.held.end(),
                                   [](const auto& h) { return h.second.duration_ms.has_value(); });
    stacks::RankFlight r{rank, s.host, s.pid, {}, {}, {}};
    for (const auto& [key, a] : s.held) {
      Collective& c = collectives[key];
      c.first = std::min(c.first, a.created_ns);
      if (a.duration_ms || !timed) c.whole++;
      holders[key.first].insert(rank);
      r.arrivals.push_back(a);
    }
    from = std::max(from, s.covered_from);
    ranks.push_back(std::move(r));
  }
  int64_t to = INT64_MIN;
  for (const auto& [key, c] : collectives) to = std::max(to, c.first + 1);
  for (const auto& [key, c] : collectives)
    if (c.first >= from && c.whole < holders[key.first].size()) to = std::min(to, c.first);
  if (ranks.size() < 2 || to <= from) return b;
  for (const auto& w : stacks::flight_wait_shares(ranks, from, to)) {
    straggler::RankShare r;
    r.rank = w.rank;
    r.host = w.host;
    r.waiting = w.waiting;
    r.looks = straggler::kExact;
    from_looks(looks, r);
    if (auto it = where_.find(w.rank); it != where_.end()) r.where = it->second;
    b.ranks.push_back(std::move(r));
  }
  // Judged: each group's collectives up to the newest that began before `to`
  // (a group's first enqueues rise with its sequence numbers).
  flight_judged_to_ = to;
  for (const auto& [key, c] : collectives) {
    if (c.first >= to || (judged_seq_.size() >= kMostHeld && !judged_seq_.count(key.first)))
      continue;
    int64_t& seq = judged_seq_.try_emplace(key.first, key.second).first->second;
    seq = std::max(seq, key.second);
  }
  for (auto& [rank, s] : flights_)
    for (auto it = s.held.begin(); it != s.held.end();) {
      const auto j = judged_seq_.find(it->first.first);
      it = j != judged_seq_.end() && it->first.second <= j->second ? s.held.erase(it)
                                                                   : std::next(it);
    }
  return b;
}

std::vector<StragglerReport::Said> StragglerReport::end_block(double end_s, double seconds,
                                                              bool by_collectives) {
  std::vector<Said> said;
  const Source heard_by = heard_source(by_collectives);
  straggler::Block kernel;
  const straggler::Block looks = looks_block(end_s, seconds, kernel);
  if (any_flight_) {
    if (auto v = by_flight_.observe(flight_block(end_s, seconds, looks)))
      said.push_back({Source::flight, heard_by == Source::flight, *v});
  }
  where_.clear();
  if (auto v = by_looks_.observe(looks))
    said.push_back({Source::looks, heard_by == Source::looks, *v});
  if (auto v = by_kernel_.observe(kernel)) said.push_back({Source::kernel, false, *v});
  if (any_counters_) {
    if (auto v = by_counters_.observe(counters_block(end_s, seconds, looks)))
      said.push_back({Source::collectives, heard_by == Source::collectives, *v});
  }
  return said;
}

bool StragglerReport::wants_where() const {
  return by_looks_.named() || by_looks_.suspected() || by_flight_.named() || by_flight_.suspected();
}

StragglerReport::Json StragglerReport::source_json(Source s) const {
  const straggler::Watch& w = watch(s);
  Json verdicts = Json::array();
  for (const auto& v : w.verdicts()) verdicts.push_back(verdict_json(v));
  Json history = Json::array();
  size_t left = w.history().size();
  for (const auto& f : w.history()) {
    Json h{{"at_s", rounded(f.end_s)},
           {"s", rounded(f.seconds)},
           {"median_waiting", rounded(f.median_waiting)},
           {"least", f.least_rank < 0
                         ? Json(nullptr)
                         : Json{{"rank", f.least_rank}, {"waiting", rounded(f.least_waiting)}}}};
    if (f.ranks.size() <= kRanksInHistory && left-- <= kBlocksWithRanks) {
      Json ranks = Json::array();
      for (const auto& r : f.ranks) {
        ranks.push_back(Json{
            {"rank", r.rank},
            {"host", r.host},
            {"waiting", rounded(r.waiting)},
            {"looks", r.looks >= straggler::kExact ? Json(nullptr) : Json(rounded(r.looks, 0))},
            {"cpu", r.cpu ? Json(rounded(*r.cpu)) : Json(nullptr)},
            {"own", Json{{"input", rounded(r.own.input)},
                         {"file", rounded(r.own.file)},
                         {"sleep", rounded(r.own.sleep)},
                         {"other", rounded(r.own.other)}}}});
      }
      h["ranks"] = std::move(ranks);
    }
    history.push_back(std::move(h));
  }
  return Json{{"named", w.named() ? Json(w.named()->line) : Json(nullptr)},
              {"verdicts", std::move(verdicts)},
              {"history", std::move(history)}};
}

StragglerReport::Json StragglerReport::json(bool by_collectives) const {
  const straggler::Settings& s = by_looks_.settings();
  const Source heard_by = heard_source(by_collectives);
  const straggler::Watch& w = watch(heard_by);
  return Json{{"threshold", rounded(s.threshold)},
              {"block_s", kBlock.count()},
              {"window_blocks", s.window},
              {"judged_by", source_name(heard_by)},
              {"named", w.named() ? Json(w.named()->line) : Json(nullptr)},
              {"looks", source_json(Source::looks)},
              {"collectives", any_counters_ ? source_json(Source::collectives) : Json(nullptr)},
              {"flight", any_flight_ ? source_json(Source::flight) : Json(nullptr)},
              {"kernel", source_json(Source::kernel)}};
}

std::vector<std::string> StragglerReport::lines(bool by_collectives) const {
  const Source heard_by = heard_source(by_collectives);
  const straggler::Watch& w = watch(heard_by);
  if (w.verdicts().empty()) return {};
  const straggler::Verdict& v = w.verdicts().back();
  char at[32];
  std::snprintf(at, sizeof at, "%.1f", v.at_s);
  return {std::string("straggler at ") + at + " s (by " + source_name(heard_by) + "): " + v.line};
}

}  // namespace dp::daemon
