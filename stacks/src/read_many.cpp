#include "dp/stacks/read_many.hpp"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

namespace dp::stacks {
namespace {

using Clock = std::chrono::steady_clock;

// Shared with the readers, which may outlive the call (a read blocked in
// the kernel): they own it together with the caller.
struct Work {
  std::vector<Target> targets;
  ReadLimits each;
  Clock::time_point deadline;
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0, done = 0;
  bool taken = false;  // the caller has its answers: later ones are dropped
  std::vector<std::optional<ProcessStacks>> answers;
};

void keep(Work& w, size_t i, const ProcessStacks& answer) {
  std::lock_guard lock(w.mu);
  if (!w.taken) w.answers[i] = answer;
}

// Takes targets until none is left or the deadline passed.
void reader(const std::shared_ptr<Work>& w) {
  for (;;) {
    size_t i = 0;
    {
      std::lock_guard lock(w->mu);
      if (w->next == w->targets.size()) return;
      i = w->next++;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(w->deadline - Clock::now());
    if (left.count() > 0) {
      ReadLimits limits = w->each;
      limits.walk.time = std::min(limits.walk.time, left);
      ProcessStacks answer = read_process(w->targets[i], limits);
      // The frames are kept before the calls are named from source files,
      // whose file system may not answer by the deadline.
      keep(*w, i, answer);
      if (!answer.no_python && Clock::now() < w->deadline) {
        name_calls(answer);
        keep(*w, i, answer);
      }
    }
    std::lock_guard lock(w->mu);
    ++w->done;
    w->cv.notify_all();
  }
}

ProcessStacks over_time(const Target& t, std::chrono::milliseconds deadline) {
  ProcessStacks p;
  p.pid = t.pid;
  p.no_python =
      NoStacks{NoPython::over_time, "pid " + std::to_string(t.pid) + " was not read within the " +
                                        std::to_string(deadline.count()) + " ms deadline"};
  return p;
}

}  // namespace

std::vector<ProcessStacks> read_processes(const std::vector<Target>& targets,
                                          const ManyLimits& limits) {
  auto w = std::make_shared<Work>();
  w->targets = targets;
  w->each = limits.each;
  w->deadline = Clock::now() + limits.deadline;
  w->answers.resize(targets.size());
  size_t started = 0;
  const size_t wanted = std::min(std::max<size_t>(limits.threads, 1), targets.size());
  for (; started < wanted; ++started) {
    try {
      std::thread(reader, w).detach();
    } catch (const std::system_error&) {
      break;  // no more threads now: those started, or this one, read the rest
    }
  }
  if (started == 0) reader(w);
  {
    std::unique_lock lock(w->mu);
    w->cv.wait_until(lock, w->deadline, [&] { return w->done == w->targets.size(); });
  }
  std::vector<ProcessStacks> out;
  out.reserve(targets.size());
  std::lock_guard lock(w->mu);
  w->taken = true;
  for (size_t i = 0; i < targets.size(); ++i) {
    out.push_back(w->answers[i] ? std::move(*w->answers[i])
                                : over_time(targets[i], limits.deadline));
  }
  return out;
}

}  // namespace dp::stacks
