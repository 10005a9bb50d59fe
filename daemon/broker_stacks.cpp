// dp-top --stacks: the node agents read their own ranks (only they run as the
// job's user beside them), the daemon merges. Nothing here blocks: the ask is
// a push, answers are requests without reply, and the round ends when the
// last node answered or at its deadline (the server's tick).
#include <algorithm>

#include "broker.hpp"
#include "stacks_message.hpp"

namespace dp::daemon {

Clock::time_point Broker::ask_stacks(StacksDone done, Clock::time_point now) {
  if (stacks_) {
    stacks_->callers.push_back(std::move(done));
    return stacks_->deadline;
  }
  StacksRound round;
  round.ask = next_stacks_ask_++;
  round.deadline = now + kStacksWait;
  round.callers.push_back(std::move(done));
  proto::Response push;
  push.mutable_stacks_ask()->set_ask(round.ask);
  // The agent's own deadline leaves room for its answer to travel.
  push.mutable_stacks_ask()->set_deadline_ms(static_cast<uint32_t>(kStacksWait.count() * 3 / 4));
  for (const auto& [conn, p] : peers_) {
    if (p.state != PeerState::ready || p.role != proto::ROLE_NODE) continue;
    round.waiting.emplace(conn, "ranks " + stacks::rank_ranges(p.node_ranks) + " (" +
                                    (p.host.empty() ? "?" : p.host) + ")");
    out_.send(conn, push);
  }
  stacks_ = std::move(round);
  if (stacks_->waiting.empty()) finish_stacks();
  return now + kStacksWait;
}

void Broker::op_stacks_answer(const Call& c, const proto::StacksAnswer& m) {
  if (!stacks_ || m.ask() != stacks_->ask || !stacks_->waiting.erase(c.conn)) return;
  // Not checked against the node's ranks: a launcher's workers carry
  // torch's ranks, which are not the Slurm tasks the node's hello claimed.
  std::vector<int> ranks;
  for (const auto& r : m.ranks()) {
    stacks_->got.push_back(rdv::rank_stacks(r, c.peer.host));
    ranks.push_back(r.rank());
  }
  std::sort(ranks.begin(), ranks.end());
  stacks_->read_on.push_back(
      (c.peer.host.empty() ? "?" : c.peer.host) + " (" +
      (ranks.empty() ? "no rank running" : "ranks " + stacks::rank_ranges(ranks)) + ")");
  if (stacks_->waiting.empty()) finish_stacks();
}

void Broker::expire_stacks(Clock::time_point now) {
  if (stacks_ && now >= stacks_->deadline) finish_stacks();
}

void Broker::finish_stacks() {
  StacksRound round = std::move(*stacks_);
  stacks_.reset();
  std::vector<std::string> lines;
  if (round.got.empty() && round.waiting.empty())
    lines.push_back("no node agent is connected: no rank to read");
  else lines = stacks::format_groups(stacks::merge_stacks(round.got));
  if (!round.read_on.empty()) {
    std::sort(round.read_on.begin(), round.read_on.end());  // by host, not by arrival
    std::string line = "read on";
    for (size_t i = 0; i < round.read_on.size(); ++i) line += (i ? ", " : " ") + round.read_on[i];
    lines.push_back(line);
  }
  for (const auto& [conn, who] : round.waiting)
    lines.push_back(who + ": no answer within " + std::to_string(kStacksWait.count() / 1000) +
                    " s");
  for (auto& done : round.callers) done(lines);
}

}  // namespace dp::daemon
