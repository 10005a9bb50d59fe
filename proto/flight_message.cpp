#include "flight_message.hpp"

#include "dp/stacks/merge.hpp"
#include "stacks_message.hpp"

namespace dp::rdv {
namespace {

constexpr size_t kMostRanks = 1u << 22;

}  // namespace

proto::RankFlight flight_message(const stacks::RankFlight& r, const FlightCaps& caps) {
  proto::RankFlight m;
  m.set_rank(r.rank);
  m.set_pid(r.pid);
  m.set_unread(capped_text(r.unread, caps.text_bytes));
  for (size_t i = 0; i < r.groups.size() && i < caps.groups; ++i) {
    const auto& g = r.groups[i];
    auto* p = m.add_groups();
    p->set_group(capped_text(g.group, caps.text_bytes));
    p->set_desc(capped_text(g.desc, caps.text_bytes));
    if (std::string ranks = stacks::rank_ranges(g.ranks); ranks.size() <= caps.ranks_bytes)
      p->set_ranks(std::move(ranks));
    p->set_last_enqueued(g.last_enqueued);
    p->set_last_completed(g.last_completed);
    p->set_op(capped_text(g.op, caps.text_bytes));
    p->set_pending(g.pending);
    p->set_age_ms(g.age_ms);
  }
  const size_t skip = r.arrivals.size() > caps.arrivals ? r.arrivals.size() - caps.arrivals : 0;
  for (size_t i = skip; i < r.arrivals.size(); ++i) {
    const auto& a = r.arrivals[i];
    auto* p = m.add_arrivals();
    p->set_group(capped_text(a.group, caps.text_bytes));
    p->set_seq(a.seq);
    p->set_op(capped_text(a.op, caps.text_bytes));
    p->set_created_ns(a.created_ns);
    if (a.duration_ms) p->set_duration_ms(*a.duration_ms);
  }
  return m;
}

stacks::RankFlight rank_flight(const proto::RankFlight& m, const std::string& host) {
  stacks::RankFlight r;
  r.rank = m.rank();
  r.host = host;
  r.pid = m.pid();
  r.unread = m.unread();
  for (const auto& p : m.groups()) {
    stacks::GroupPlace g;
    g.group = p.group();
    g.desc = p.desc();
    g.ranks = stacks::parse_rank_ranges(p.ranks(), kMostRanks).value_or(std::vector<int>{});
    g.last_enqueued = p.last_enqueued();
    g.last_completed = p.last_completed();
    g.op = p.op();
    g.pending = p.pending();
    g.age_ms = p.age_ms();
    r.groups.push_back(std::move(g));
  }
  for (const auto& p : m.arrivals()) {
    stacks::Arrival a{p.group(), p.seq(), p.op(), p.created_ns(), std::nullopt};
    if (p.has_duration_ms()) a.duration_ms = p.duration_ms();
    r.arrivals.push_back(std::move(a));
  }
  return r;
}

}  // namespace dp::rdv
