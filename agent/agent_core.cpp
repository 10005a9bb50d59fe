#include "agent_core.hpp"

#include <algorithm>

#include "dp/duration_text.hpp"
#include "hello_proof.hpp"

namespace dp::agent {
AgentCore::AgentCore(AgentConfig cfg, AgentOutbox& out, Clock::time_point now)
    : cfg_(std::move(cfg)),
      out_(out),
      folds_(cfg_.max_cache_bytes),
      daemon_(cfg_.daemon_silence, cfg_.heartbeat_every, now) {
  if (!cfg_.make_nonce) cfg_.make_nonce = rdv::random_nonce;
  std::sort(cfg_.node_ranks.begin(), cfg_.node_ranks.end());
  for (int32_t r : cfg_.node_ranks) ranks_[r];
  next_beat_ = now + cfg_.heartbeat_every;
  next_ping_ = now + cfg_.ping_every;
}

void AgentCore::on_tick(Clock::time_point now) {
  if (link_ == Link::gone) return;
  if (pending_end_) {  // the survivors' read did not come back in time: end without it
    if (!pending_end_->deadline) pending_end_->deadline = now + kAtFailureWait;
    if (now >= *pending_end_->deadline) end_pending();
  }
  daemon_.woke(now);  // a late tick: the agent itself was stopped (a suspended job)
  watch_daemon(now);
  if (link_ == Link::gone) return;
  expire_hellos(now);
  expire_waiters(now);
  for (auto& [rank, s] : ranks_)
    if (s.dropped_at && now - *s.dropped_at >= cfg_.exit_status_grace)
      report_lost(rank, s, now, "its connection to the node agent dropped without a goodbye");
  if (now >= next_beat_) beat(now);
  if (now >= next_ping_) {
    next_ping_ = now + cfg_.ping_every;
    proto::Response keepalive;
    for (auto& [conn, l] : locals_)
      if (l.ready) out_.to_rank(conn, keepalive);
  }
}

std::string AgentCore::silence_text(Clock::time_point now) const {
  return "dp-rendezvousd at " + cfg_.daemon_addr + " sent nothing for " +
         ms_text(daemon_.silent(now)) +
         " although it pings every second: it or the host of srun is stopped, frozen or "
         "unreachable (the bound is the site's heartbeat_timeout)";
}

// Silence first puts the link in doubt (a new connection is tried), and at
// the site's bound ends the node's part of the step.
void AgentCore::watch_daemon(Clock::time_point now) {
  const auto silent = daemon_.silent(now);
  if (daemon_.over(now)) return on_daemon_lost(silence_text(now));
  // With spares the node gives up its place sooner: the daemon replaces a
  // node silent for spare_timeout, and only once fence_after has passed.
  if (cfg_.fence_after.count() > 0 && silent >= cfg_.fence_after)
    return on_daemon_lost(silence_text(now) +
                          "; the node's programs are killed (site key "
                          "fence_after): a spare may take its place");
  const auto doubt = daemon_.bounded()
                         ? std::min<Clock::duration>(cfg_.doubt_after, daemon_.limit() / 2)
                         : Clock::duration(cfg_.doubt_after);
  if (link_ == Link::ready && silent >= doubt)
    on_daemon_doubt("nothing heard for " + ms_text(silent), now);
}

// One heartbeat for the node: the ranks heard since the last one, and the
// tasks that never talk to slurm-dp (no libdp) but still run: the agent's own
// heartbeat is all that shows their node alive, so a frozen node falls silent.
void AgentCore::beat(Clock::time_point now) {
  next_beat_ = now + cfg_.heartbeat_every;
  if (link_ != Link::ready) return;
  for (const auto& [rank, s] : ranks_)
    if (s.conn == 0 && !s.goodbye && !s.lost && !s.wait_status && !s.dropped_at) heard_[rank];
  proto::Request req;
  auto* hb = req.mutable_heartbeat();
  for (auto& [rank, progress] : heard_) {
    auto* rp = hb->add_ranks();
    rp->set_rank(rank);
    if (progress) *rp->mutable_progress() = *progress;
  }
  heard_.clear();
  hb->set_store_strangers(store_strangers_);
  out_.add_samples(*hb);
  out_.to_daemon(req);
}

void AgentCore::expire_hellos(Clock::time_point now) {
  std::vector<ConnId> late;
  for (auto& [conn, l] : locals_)
    if (!l.ready && now - l.since >= cfg_.hello_timeout) late.push_back(conn);
  for (ConnId c : late) reject(c, 0, proto::TIMEOUT, "no hello in time");
}

}  // namespace dp::agent
