// What the step learns of PyTorch's store (SPACE_TORCH) for its report and
// failure: waits for keys never set, and the node agents' refusals. The
// operations themselves: torch_store_ops.cpp.
#include "broker.hpp"

#include <algorithm>
#include <cstdio>

#include "dp/duration_text.hpp"
#include "dp/shown_value.hpp"

namespace dp::daemon {

void log_step(const BrokerConfig& cfg, const std::string& line) {
  std::fprintf(stderr, "dp-rendezvousd: job %s step %s: %s\n", cfg.job_id.c_str(),
               cfg.step_id.c_str(), line.c_str());
}

void Broker::torch_note_unset(const Peer& p, const Waiter& w, Clock::time_point now,
                              bool given_up) {
  std::vector<std::string> missing;
  for (const auto& k : w.keys)
    if (!store_.contains(w.space, k)) missing.push_back(k);
  if (missing.empty()) return;
  std::string keys;
  for (size_t i = 0; i < missing.size() && i < 3; ++i)
    keys += (i ? ", " : "") + shown_key(missing[i]);
  if (missing.size() > 3) keys += " and " + std::to_string(missing.size() - 3) + " more";
  const std::string who =
      p.role == proto::ROLE_NODE
          ? "the clients on host " + p.host + " (ranks " + rank_list(p.node_ranks) + ")"
          : peers_.describe_peer(p);
  const std::string waited = seconds_text(now - w.since, 1);
  const std::string why =
      abort_ ? abort_->message
             : "no rank of the step has failed: the one that sets it has not got there "
               "(its output says where it is)";
  std::string line = "PyTorch's store: " + who + " " +
                     (given_up ? "stopped waiting after " + waited : "waiting " + waited) +
                     " for " + keys + ", never set; " + why;
  // Once per key, kept for the report; printed (srun --dp-verbose shows it)
  // once the step failed, those before then with the failure (abort_job).
  if (report_.note_unset_wait(missing.front(), line) && abort_) log_step(cfg_, line);
}

void Broker::torch_refused(const Call& c, const proto::StoreRefused& m) {
  if (c.peer.role != proto::ROLE_NODE) {
    if (c.id != 0)
      reply_error(c.conn, c.id, proto::INVALID_ARGUMENT,
                  "store_refused: only a node agent serves a PyTorch store");
    return;
  }
  uint64_t& count = store_refused_[c.peer.host];
  count = std::max(count, m.refused());  // a count so far: one sent again changes nothing
  if (m.line().empty()) return;
  const std::string line =
      "PyTorch's store on host " + c.peer.host + ": " + shown_value(m.line(), 1024);
  if (report_.note_store_refusal(line)) log_step(cfg_, line);
}

}  // namespace dp::daemon
