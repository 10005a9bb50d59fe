// Runs a communicator's collectives in order on one worker thread, so a
// caller can overlap them with compute (all_reduce_async) while every rank
// still issues them in the same order. fail_all() completes every pending
// handle with an error at once (a peer died); the worker may stay blocked
// inside the backend until its own timeout, so the queue's state is shared
// with the thread and outlives the communicator if it must.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "dp/communicator.hpp"

namespace dp::detail {

// Outcome slot shared by a handle, the worker and the abort path.
class OpState {
 public:
  explicit OpState(std::string label = {}) : label_(std::move(label)) {}
  // "all_reduce (gloo, rank 0 of 4)": prefixes an abort that fails this op.
  const std::string& label() const { return label_; }
  // First completion wins: an abort that arrives first is not overwritten.
  void complete(Result<void> r);
  // Runs f (which reads or writes the caller's buffers) only while the op is
  // still pending, under the same lock as complete(): once a caller has been
  // told its op failed, nothing touches its memory again, even if the worker
  // is still stuck inside the backend with a dead peer.
  template <class F>
  bool touch_user_memory(F&& f) {
    std::lock_guard<std::mutex> lock(m_);
    if (result_) return false;
    f();
    return true;
  }
  Result<void> wait();
  bool done();

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::optional<Result<void>> result_;
  std::string label_;
};

class OpWork final : public Work {
 public:
  explicit OpWork(std::shared_ptr<OpState> s) : state_(std::move(s)) {}
  Result<void> wait() override { return state_->wait(); }

 private:
  std::shared_ptr<OpState> state_;
};

class ReadyWork final : public Work {
 public:
  explicit ReadyWork(Result<void> r) : r_(std::move(r)) {}
  Result<void> wait() override { return r_; }

 private:
  Result<void> r_;
};

class OpQueue {
 public:
  using Op = std::function<Result<void>(OpState&)>;
  OpQueue();
  ~OpQueue();  // joins the worker, or leaves it (and its state) behind after fail_all
  OpQueue(const OpQueue&) = delete;
  OpQueue& operator=(const OpQueue&) = delete;

  // After fail_all(), returns a handle already failed with that error.
  std::shared_ptr<OpState> submit(std::string label, Op op);
  void fail_all(const Error& err);
  std::optional<Error> failure();

 private:
  struct Shared;
  static void run(std::shared_ptr<Shared> s);
  std::shared_ptr<Shared> s_;
  std::thread worker_;
};

}  // namespace dp::detail
