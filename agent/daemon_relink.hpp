// A new connection to the step's daemon after an outage, made on a thread of
// its own: the agent's loop keeps pinging its ranks and watching its tasks
// while connect and hello wait on a network that may still be cut. The loop
// polls take() on its tick; destroying it cancels and joins (one attempt's
// wait at most).
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include "daemon_hello.hpp"

namespace dp::agent {

class DaemonRelink {
 public:
  DaemonRelink() = default;
  ~DaemonRelink();
  DaemonRelink(const DaemonRelink&) = delete;
  DaemonRelink& operator=(const DaemonRelink&) = delete;

  // One at a time: a call while one runs is ignored.
  void start(NodeHello hello, HelloRetry retry);
  bool running() const { return thread_.joinable(); }
  // The outcome once the thread ended (it is joined then); nullopt before.
  std::optional<Result<DaemonLink>> take();

 private:
  std::thread thread_;
  std::mutex mu_;
  std::optional<Result<DaemonLink>> result_;
  std::atomic<bool> cancel_{false};
};

}  // namespace dp::agent
