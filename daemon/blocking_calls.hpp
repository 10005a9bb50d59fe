// Answering the blocking calls (get, wait, barrier): their replies, cancels
// and timeouts, and what a PyTorch wait given up says of keys never set.
// PendingCalls (pending_calls.hpp) keeps them, their limits and messages.
#pragma once

#include <string>
#include <vector>

#include "step_state.hpp"

namespace dp::daemon {

class BlockingCalls {
 public:
  explicit BlockingCalls(StepState& step) : step_(step) {}

  // A get or wait on `keys`; timeout_ms 0: no deadline; value: a wait of one
  // key whose answer brings its value (Wait.value).
  void add(const Call& c, WaitKind kind, std::vector<std::string> keys, uint32_t timeout_ms,
           bool value = false);
  // A wait whose keys all exist: OK, with value_of's value when it has one.
  void answer_wait(ConnId conn, uint64_t id, proto::Space space, const std::string* value_of);
  // A node agent's caller gave up a get or wait: it is dropped unanswered.
  void cancel(const Call& c, const proto::CancelCall& m);
  // Answered: a get's value, or OK.
  void finish(uint64_t wid, Clock::time_point now);
  void fail(uint64_t wid, proto::Code code, std::string message);
  // `key` was set: the calls it completes are answered.
  void key_changed(proto::Space space, const std::string& key, Clock::time_point now);
  void expire(Clock::time_point now);
  // A get completed: the start-up phase counts every rank the caller speaks for.
  void mark_fetched(ConnId conn, const Peer& p, Clock::time_point now);
  // PyTorch's own timeout error names neither the keys a wait was for nor
  // who never set them, so the daemon does, with the step's first failure:
  // when a wait is given up (the clients' timeout, or they left) and, for
  // those still waiting, when the step fails. Once per key, for the first
  // few keys; logged and listed only once the step failed.
  void note_unset(const Peer& p, const Waiter& w, Clock::time_point now, bool given_up);

 private:
  StepState& step_;
};

}  // namespace dp::daemon
