#include "stacks_rounds.hpp"

#include <algorithm>

#include "dp/stacks/straggler_samples.hpp"
#include "flight_message.hpp"
#include "stacks_message.hpp"

namespace dp::daemon {

std::optional<proto::Response> StacksRounds::start(Clock::time_point now, bool flight,
                                                   std::map<ConnId, std::string> nodes) {
  if (round_) return std::nullopt;
  Round r;
  r.ask = next_ask_++;
  r.deadline = now + kWait;
  r.waiting = std::move(nodes);
  proto::Response push;
  push.mutable_stacks_ask()->set_ask(r.ask);
  push.mutable_stacks_ask()->set_flight(flight);
  // The agent's own deadline leaves room for its answer to travel.
  push.mutable_stacks_ask()->set_deadline_ms(static_cast<uint32_t>(kWait.count() * 3 / 4));
  round_ = std::move(r);
  return push;
}

void StacksRounds::add_caller(Done done) {
  if (round_) round_->callers.push_back(std::move(done));
}

void StacksRounds::for_watch() {
  if (round_) round_->for_watch = true;
}

bool StacksRounds::answer(ConnId conn, const std::string& host, const proto::StacksAnswer& m) {
  if (!round_ || m.ask() != round_->ask || !round_->waiting.erase(conn)) return false;
  // Not checked against the node's ranks: a launcher's workers carry
  // torch's ranks, which are not the Slurm tasks the node's hello claimed.
  std::vector<int> ranks;
  for (const auto& r : m.ranks()) {
    round_->got.push_back(rdv::rank_stacks(r, host));
    ranks.push_back(r.rank());
  }
  for (const auto& f : m.flights()) round_->flights.push_back(rdv::rank_flight(f, host));
  std::sort(ranks.begin(), ranks.end());
  round_->read_on.push_back(
      (host.empty() ? "?" : host) + " (" +
      (ranks.empty() ? "no rank running" : "ranks " + stacks::rank_ranges(ranks)) + ")");
  return round_->waiting.empty();
}

StacksRounds::Finished StacksRounds::finish() {
  Round r = std::move(*round_);
  round_.reset();
  Finished f;
  f.complete = r.waiting.empty();
  f.for_watch = r.for_watch;
  if (!r.callers.empty()) {
    if (r.got.empty() && r.waiting.empty())
      f.lines.push_back("no node agent is connected: no rank to read");
    else f.lines = stacks::format_groups(stacks::merge_stacks(r.got));
    // NCCL ranks' places (a rank without a pipe is no NCCL program: not listed).
    std::vector<stacks::RankFlight> nccl;
    for (const auto& fl : r.flights)
      if (fl.unread.rfind("no pipe", 0) != 0) nccl.push_back(fl);
    for (auto& l : stacks::flight_lines(nccl)) f.lines.push_back(std::move(l));
    if (!r.read_on.empty()) {
      std::sort(r.read_on.begin(), r.read_on.end());  // by host, not by arrival
      std::string line = "read on";
      for (size_t i = 0; i < r.read_on.size(); ++i) line += (i ? ", " : " ") + r.read_on[i];
      f.lines.push_back(line);
    }
    for (const auto& [conn, who] : r.waiting)
      f.lines.push_back(who + ": no answer within " + std::to_string(kWait.count() / 1000) + " s");
  }
  f.got = std::move(r.got);
  f.flights = std::move(r.flights);
  f.callers = std::move(r.callers);
  return f;
}

std::optional<std::vector<std::string>> StacksRounds::at_failure(ConnId conn,
                                                                 const std::string& host,
                                                                 const proto::StacksAnswer& m) {
  if (!failure_read_.insert(conn).second) return std::nullopt;
  for (const auto& r : m.ranks()) failure_got_.push_back(rdv::rank_stacks(r, host));
  return stacks::format_groups(stacks::merge_stacks(failure_got_));
}

}  // namespace dp::daemon
