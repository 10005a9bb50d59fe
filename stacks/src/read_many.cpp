#include "dp/stacks/read_many.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace dp::stacks {
namespace {

using Clock = std::chrono::steady_clock;
using Key = std::pair<int, unsigned long long>;  // a target: pid and start time

// The targets whose read has not returned, across rounds, and the reader
// threads alive: the process's, never freed (a detached reader may outlive
// any caller).
struct InFlight {
  std::mutex mu;
  std::set<Key> reading;
  std::atomic<int> threads{0};
};
InFlight& in_flight() {
  static auto* f = new InFlight;
  return *f;
}

// Shared with the readers, which may outlive the call (a read blocked in
// the kernel): they own it together with the caller.
struct Work {
  std::vector<Target> targets;
  std::vector<size_t> todo;  // the targets' indexes to read (none already blocked)
  ReadLimits each;
  ManyLimits::Read read;
  Clock::time_point deadline;
  SourceBudget sources;
  bool program_calls_only = false;
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

// One target, marked as being read until its read returns.
void read_one(Work& w, size_t i) {
  const Target& t = w.targets[i];
  const Key key{t.pid, t.start_ticks};
  {
    std::lock_guard lock(in_flight().mu);
    if (!in_flight().reading.insert(key).second) return;  // another round's read still blocks
  }
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(w.deadline - Clock::now());
  if (left.count() > 0) {
    ReadLimits limits = w.each;
    limits.walk.time = std::min(limits.walk.time, left);
    ProcessStacks answer = w.read ? w.read(t, limits) : read_process(t, limits);
    // The frames are kept before the calls are named from source files,
    // whose file system may not answer by the deadline.
    keep(w, i, answer);
    if (!answer.no_python && Clock::now() < w.deadline) {
      SourceLimits sources;
      sources.budget = &w.sources;
      sources.program_files_only = w.program_calls_only;
      name_calls(answer, sources);
      keep(w, i, answer);
    }
  }
  std::lock_guard lock(in_flight().mu);
  in_flight().reading.erase(key);
}

// Takes targets until none is left or the deadline passed.
void reader(const std::shared_ptr<Work>& w) {
  for (;;) {
    size_t i = 0;
    {
      std::lock_guard lock(w->mu);
      if (w->next == w->todo.size()) break;
      i = w->todo[w->next++];
    }
    read_one(*w, i);
    std::lock_guard lock(w->mu);
    ++w->done;
    w->cv.notify_all();
  }
}

ProcessStacks over_time(const Target& t, const std::string& why) {
  ProcessStacks p;
  p.pid = t.pid;
  p.no_python = NoStacks{NoPython::over_time, "pid " + std::to_string(t.pid) + " " + why};
  return p;
}

// The round's targets to read: those whose read of an earlier round still
// blocks are left out (answered over_time without a thread).
std::vector<size_t> readable(const std::vector<Target>& targets, std::vector<bool>& blocked) {
  std::vector<size_t> todo;
  blocked.assign(targets.size(), false);
  std::lock_guard lock(in_flight().mu);
  for (size_t i = 0; i < targets.size(); ++i) {
    blocked[i] = in_flight().reading.count({targets[i].pid, targets[i].start_ticks}) > 0;
    if (!blocked[i]) todo.push_back(i);
  }
  return todo;
}

}  // namespace

int live_readers() { return in_flight().threads.load(); }

std::vector<ProcessStacks> read_processes(const std::vector<Target>& targets,
                                          const ManyLimits& limits) {
  auto w = std::make_shared<Work>();
  w->targets = targets;
  w->each = limits.each;
  w->read = limits.read;
  w->deadline = Clock::now() + limits.deadline;
  w->sources.bytes = static_cast<long long>(limits.source_bytes);
  w->sources.deadline = w->deadline;
  w->program_calls_only = limits.program_calls_only;
  w->answers.resize(targets.size());
  std::vector<bool> blocked;
  w->todo = readable(targets, blocked);
  size_t started = 0;
  const size_t wanted = std::min(std::max<size_t>(limits.threads, 1), w->todo.size());
  for (; started < wanted; ++started) {
    try {
      in_flight().threads.fetch_add(1);
      std::thread([w] {
        reader(w);
        in_flight().threads.fetch_sub(1);
      }).detach();
    } catch (const std::system_error&) {
      in_flight().threads.fetch_sub(1);
      break;  // no more threads now: those started, or this one, read the rest
    }
  }
  if (started == 0) reader(w);
  {
    std::unique_lock lock(w->mu);
    w->cv.wait_until(lock, w->deadline, [&] { return w->done == w->todo.size(); });
  }
  std::vector<ProcessStacks> out;
  out.reserve(targets.size());
  std::lock_guard lock(w->mu);
  w->taken = true;
  const std::string late =
      "was not read within the " + std::to_string(limits.deadline.count()) + " ms deadline";
  for (size_t i = 0; i < targets.size(); ++i) {
    if (w->answers[i]) out.push_back(std::move(*w->answers[i]));
    else if (blocked[i])
      out.push_back(over_time(targets[i],
                              "was not read: an earlier read of it still waits in "
                              "the kernel (its memory map lock)"));
    else out.push_back(over_time(targets[i], late));
  }
  return out;
}

}  // namespace dp::stacks
