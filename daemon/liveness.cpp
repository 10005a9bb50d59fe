#include "liveness.hpp"

#include <cstdio>

namespace dp::daemon {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

Liveness::Liveness(int world_size, milliseconds silence_limit, Clock::time_point now)
    : ranks_(static_cast<size_t>(world_size > 0 ? world_size : 0)),
      limit_(silence_limit),
      last_tick_(now),
      last_any_heard_(now) {}

void Liveness::connected(int rank, ConnId conn, const std::string& host, Clock::time_point now) {
  RankSlot& s = slot(rank);
  s.conn = conn;
  s.host = host;
  s.goodbye = false;
  if (!s.hello) {
    s.hello = true;
    ++seen_;
  }
  ++connected_;
  heard(rank, now);
}

void Liveness::disconnected(int rank, ConnId conn, bool goodbye) {
  RankSlot& s = slot(rank);
  if (s.conn != conn) return;
  s.conn = 0;
  --connected_;
  if (goodbye && !s.goodbye) {
    s.goodbye = true;
    ++goodbyes_;
  }
}

void Liveness::moved(int rank, ConnId from, ConnId to, Clock::time_point now) {
  RankSlot& s = slot(rank);
  if (s.conn != from) return;
  s.conn = to;
  heard(rank, now);
}

void Liveness::restarted(int rank, ConnId conn, const std::string& host, Clock::time_point now) {
  RankSlot& s = slot(rank);
  if (s.conn != 0) --connected_;
  if (s.goodbye) --goodbyes_;
  s.goodbye = false;
  s.conn = conn;
  s.host = host;
  if (!s.hello) {
    s.hello = true;
    ++seen_;
  }
  if (conn != 0) ++connected_;
  heard(rank, now);
}

bool Liveness::mark_fetched(int rank) {
  RankSlot& s = slot(rank);
  if (s.fetched) return false;
  s.fetched = true;
  return ++fetched_ == world_size();
}

void Liveness::forgive(Clock::time_point now) {
  for (RankSlot& s : ranks_) {
    if (s.conn != 0) s.last_heard = now;
  }
  last_any_heard_ = now;
}

void Liveness::heard(int rank, Clock::time_point now) {
  slot(rank).last_heard = now;
  last_any_heard_ = now;
  if (suspended_) {
    // The first rank back: the others resume within moments; start everyone afresh.
    suspended_ = false;
    std::fprintf(
        stderr,
        "dp-rendezvousd: rank %d is heard again after %lld ms of silence of every rank: the step "
        "resumed\n",
        rank, static_cast<long long>(duration_cast<milliseconds>(now - suspended_since_).count()));
    forgive(now);
  }
}

void Liveness::tick(Clock::time_point now) {
  if (now - last_tick_ >= kStopGap) {
    // The daemon (or its whole host) was stopped: nobody's silence counts.
    ++stop_gaps_;
    std::fprintf(stderr,
                 "dp-rendezvousd: the daemon did not run for %lld ms (stopped or starved); ranks' "
                 "silence in that time is not held against them\n",
                 static_cast<long long>(duration_cast<milliseconds>(now - last_tick_).count()));
    forgive(now);
  }
  last_tick_ = now;
  if (!suspended_ && connected_ > 0 && now - last_any_heard_ >= kAllSilent) {
    suspended_ = true;
    suspended_since_ = last_any_heard_;
    ++suspensions_;
    std::fprintf(
        stderr,
        "dp-rendezvousd: no rank heard for %lld ms: the step looks suspended (scontrol suspend, "
        "gang scheduling, a debugger); waiting for it to resume\n",
        static_cast<long long>(duration_cast<milliseconds>(now - last_any_heard_).count()));
  }
}

std::vector<int> Liveness::silent(Clock::time_point now) const {
  std::vector<int> out;
  if (limit_.count() <= 0 || suspended_ || now - last_tick_ >= kStopGap) return out;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const RankSlot& s = ranks_[r];
    if (s.conn != 0 && now - s.last_heard >= limit_) out.push_back(static_cast<int>(r));
  }
  return out;
}

}  // namespace dp::daemon
