// Runs a communicator's collectives in order on one worker thread, so a
// caller can overlap them with compute (all_reduce_async) while every rank
// still issues them in the same order. fail_all() (a peer died) completes
// queued handles at once; the running op completes when the worker leaves
// the backend (the backend is expected to break its connections so that
// happens at once), or after a grace period if it does not. The queue's state
// is shared with the thread and outlives the communicator if it must.
#pragma once

#include <chrono>
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
  // The op is doomed: a caller waiting on it gets err once the worker is out
  // of the backend, or after grace at the latest.
  void fail_after(const Error& err, std::chrono::milliseconds grace);
  Result<void> wait();
  bool done();

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::optional<Result<void>> result_;
  std::optional<Error> doomed_;
  std::chrono::steady_clock::time_point doomed_deadline_;
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
  using Op = std::function<Result<void>()>;
  // grace: how long a caller waits for the worker to leave the backend after
  // fail_all before it is told of the failure anyway.
  explicit OpQueue(std::chrono::milliseconds grace = std::chrono::seconds(5));
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
  std::chrono::milliseconds grace_;
  std::thread worker_;
};

}  // namespace dp::detail
