// PyTorch's store operations that the step's own key space has no use for
// (SPACE_TORCH): what the node agents need to answer unmodified TCPStore
// clients as PyTorch's server would. A friend of Broker, kept apart from its
// own operations.
#pragma once

#include "broker.hpp"

namespace dp::daemon {

class TorchOps {
 public:
  // Handles `req` when it is one of these operations (false: not one of them).
  static bool handle(Broker& b, const Broker::Call& c, const proto::Request& req);
  // PyTorch's own timeout error names neither the keys a wait was for nor
  // who never set them, so the daemon does, with the step's first failure:
  // when a wait is given up (the clients' timeout, or they left) and, for
  // those still waiting, when the step fails. Once per key, for the first
  // few keys; logged and listed only once the step failed.
  static void note_unset(Broker& b, const Broker::Peer& p, const Broker::Waiter& w,
                         Clock::time_point now, bool given_up);
  // A node agent refused one of its clients' requests (StoreRefused): counted
  // by node, the first few lines kept for the report and srun's end.
  static void refused(Broker& b, const Broker::Call& c, const proto::StoreRefused& m);
  // One line of the daemon's log about the step's store.
  static void log(const Broker& b, const std::string& line);

 private:
  using Call = Broker::Call;
  static void append(Broker& b, const Call& c, const proto::Append& m);
  static void check(Broker& b, const Call& c, const proto::Check& m);
  static void num_keys(Broker& b, const Call& c);
  static void multi_get(Broker& b, const Call& c, const proto::MultiGet& m);
  static void multi_set(Broker& b, const Call& c, const proto::MultiSet& m);
  static void queue_push(Broker& b, const Call& c, const proto::QueuePush& m);
  static void queue_pop(Broker& b, const Call& c, const proto::QueuePop& m);
  static void queue_len(Broker& b, const Call& c, const proto::QueueLen& m);
  // Every key's size; else the error is sent and false returned.
  template <class Keys>
  static bool keys_fit(Broker& b, const Call& c, const Keys& keys);
};

}  // namespace dp::daemon
