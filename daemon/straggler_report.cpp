#include "straggler_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

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
                          {"since_s", rounded(v.since_s)},
                          {"line", v.line}};
  return j;
}

}  // namespace

const char* StragglerReport::source_name(Source s) noexcept {
  return s == Source::collectives ? "collectives" : "looks";
}

StragglerReport::StragglerReport(straggler::Settings settings, long ticks_per_second,
                                 int world_size)
    : ticks_per_second_(ticks_per_second > 0 ? ticks_per_second : 100),
      max_ranks_(64 * static_cast<size_t>(std::max(world_size, 1)) + 1024),
      by_looks_(settings),
      by_counters_(settings) {}

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

straggler::Block StragglerReport::looks_block(double end_s, double seconds) {
  straggler::Block b{end_s, seconds, {}};
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
    if (auto w = where_.find(rank); w != where_.end()) r.where = w->second;
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
    // What it computes: the looks' CPU figure of the same rank, when its node samples.
    for (const auto& s : looks.ranks)
      if (s.rank == rank) r.cpu = s.cpu;
    b.ranks.push_back(std::move(r));
  }
  return b;
}

std::vector<StragglerReport::Said> StragglerReport::end_block(double end_s, double seconds,
                                                              bool by_collectives) {
  std::vector<Said> said;
  const straggler::Block looks = looks_block(end_s, seconds);
  where_.clear();
  if (auto v = by_looks_.observe(looks)) said.push_back({Source::looks, !by_collectives, *v});
  if (any_counters_) {
    if (auto v = by_counters_.observe(counters_block(end_s, seconds, looks)))
      said.push_back({Source::collectives, by_collectives, *v});
  }
  return said;
}

bool StragglerReport::wants_where() const { return by_looks_.named() || by_looks_.suspected(); }

StragglerReport::Json StragglerReport::source_json(Source s) const {
  const straggler::Watch& w = s == Source::collectives ? by_counters_ : by_looks_;
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
            {"cpu", r.cpu ? Json(rounded(*r.cpu)) : Json(nullptr)}});
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
  const Source heard_by = by_collectives ? Source::collectives : Source::looks;
  const straggler::Watch& w = heard(by_collectives);
  return Json{{"threshold", rounded(s.threshold)},
              {"block_s", kBlock.count()},
              {"window_blocks", s.window},
              {"judged_by", source_name(heard_by)},
              {"named", w.named() ? Json(w.named()->line) : Json(nullptr)},
              {"looks", source_json(Source::looks)},
              {"collectives", any_counters_ ? source_json(Source::collectives) : Json(nullptr)}};
}

std::vector<std::string> StragglerReport::lines(bool by_collectives) const {
  const straggler::Watch& w = heard(by_collectives);
  if (w.verdicts().empty()) return {};
  const straggler::Verdict& v = w.verdicts().back();
  char at[32];
  std::snprintf(at, sizeof at, "%.1f", v.at_s);
  return {std::string("straggler at ") + at + " s (by " +
          source_name(by_collectives ? Source::collectives : Source::looks) + "): " + v.line};
}

}  // namespace dp::daemon
