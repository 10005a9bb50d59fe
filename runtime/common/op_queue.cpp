#include "op_queue.hpp"

#include <chrono>
#include <exception>

namespace dp::detail {

void OpState::complete(Result<void> r) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (result_) return;
    result_.emplace(std::move(r));
  }
  cv_.notify_all();
}

void OpState::fail_after(const Error& err, std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (result_ || doomed_) return;
    doomed_ = err;
    doomed_deadline_ = std::chrono::steady_clock::now() + grace;
  }
  cv_.notify_all();
}

Result<void> OpState::wait() {
  std::unique_lock<std::mutex> lock(m_);
  while (!result_) {
    if (!doomed_) {
      cv_.wait(lock);
    } else if (cv_.wait_until(lock, doomed_deadline_) == std::cv_status::timeout && !result_) {
      result_.emplace(*doomed_);  // the backend did not let go: stop waiting for it
    }
  }
  return *result_;
}

bool OpState::done() {
  std::lock_guard<std::mutex> lock(m_);
  return result_.has_value();
}

struct OpQueue::Shared {
  std::mutex m;
  std::condition_variable cv;
  std::condition_variable idle_cv;
  std::deque<std::pair<Op, std::shared_ptr<OpState>>> queue;
  std::shared_ptr<OpState> running;
  std::optional<Error> failure;
  bool stop = false;
  bool finished = false;
};

OpQueue::OpQueue(std::chrono::milliseconds grace) : s_(std::make_shared<Shared>()), grace_(grace) {
  worker_ = std::thread(&OpQueue::run, s_);
}

OpQueue::~OpQueue() {
  {
    std::lock_guard<std::mutex> lock(s_->m);
    s_->stop = true;
  }
  s_->cv.notify_all();
  bool failed;
  {
    std::unique_lock<std::mutex> lock(s_->m);
    failed = s_->failure.has_value();
    if (failed) {
      // The worker may be stuck in a collective with a dead peer; give it a
      // moment, then leave it behind holding only shared state.
      s_->idle_cv.wait_for(lock, std::chrono::seconds(1), [&] { return s_->finished; });
      failed = !s_->finished;
    }
  }
  if (failed) {
    worker_.detach();
  } else {
    worker_.join();
  }
}

namespace {

Error labelled(const std::shared_ptr<OpState>& op, const Error& e) {
  if (op->label().empty()) return e;
  return make_error(e.code, op->label() + ": " + e.message);
}

}  // namespace

std::shared_ptr<OpState> OpQueue::submit(std::string label, Op op) {
  auto state = std::make_shared<OpState>(std::move(label));
  {
    std::lock_guard<std::mutex> lock(s_->m);
    if (s_->failure) {
      state->complete(labelled(state, *s_->failure));
      return state;
    }
    s_->queue.emplace_back(std::move(op), state);
  }
  s_->cv.notify_one();
  return state;
}

void OpQueue::fail_all(const Error& err) {
  std::deque<std::pair<Op, std::shared_ptr<OpState>>> dropped;
  std::shared_ptr<OpState> running;
  {
    std::lock_guard<std::mutex> lock(s_->m);
    if (!s_->failure) s_->failure = err;
    dropped.swap(s_->queue);
    running = s_->running;
  }
  if (running) running->fail_after(labelled(running, err), grace_);
  for (auto& [op, state] : dropped) state->complete(labelled(state, err));
}

std::optional<Error> OpQueue::failure() {
  std::lock_guard<std::mutex> lock(s_->m);
  return s_->failure;
}

void OpQueue::run(std::shared_ptr<Shared> s) {
  while (true) {
    std::pair<Op, std::shared_ptr<OpState>> item;
    {
      std::unique_lock<std::mutex> lock(s->m);
      s->cv.wait(lock, [&] { return s->stop || !s->queue.empty(); });
      if (s->queue.empty()) break;
      item = std::move(s->queue.front());
      s->queue.pop_front();
      s->running = item.second;
    }
    Result<void> r = item.first();
    {
      std::lock_guard<std::mutex> lock(s->m);
      s->running.reset();
      // A failure that arrived meanwhile explains this op's outcome better.
      if (s->failure) r = labelled(item.second, *s->failure);
    }
    item.second->complete(std::move(r));
  }
  {
    std::lock_guard<std::mutex> lock(s->m);
    s->finished = true;
  }
  s->idle_cv.notify_all();
}

}  // namespace dp::detail
