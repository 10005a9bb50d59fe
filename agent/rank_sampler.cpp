#include "rank_sampler.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <system_error>

#include "dp/stacks/read_many.hpp"

namespace dp::agent {

RankSampler::~RankSampler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RankSampler::start(std::chrono::milliseconds every) {
  std::lock_guard<std::mutex> lock(mu_);
  every_ = std::max(every, std::chrono::milliseconds(10));
  if (thread_.joinable()) return;
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    every_ = std::chrono::milliseconds(0);
  }
}

void RankSampler::set_ranks(const std::vector<TaskStart>& ranks) {
  std::lock_guard<std::mutex> lock(mu_);
  ranks_ = ranks;
}

std::vector<proto::RankSamples> RankSampler::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

void RankSampler::run() {
  std::map<int, Watched> watched;  // by pid: this thread's own
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    next += every_;
    if (wake_.wait_until(lock, next, [this] { return stop_; })) break;
    const std::vector<TaskStart> ranks = ranks_;
    lock.unlock();
    look(watched, ranks);
    const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now().time_since_epoch());
    std::vector<proto::RankSamples> out;
    for (const auto& [pid, w] : watched) {
      proto::RankSamples s;
      s.set_rank(w.rank);
      s.set_pid(pid);
      s.set_looks(w.counts.looks);
      s.set_waiting(w.counts.waiting);
      s.set_running(w.counts.running);
      s.set_own_input(w.counts.input);
      s.set_own_file(w.counts.file);
      s.set_own_sleep(w.counts.sleep);
      s.set_own_other(w.counts.other);
      s.set_futex(w.counts.futex);
      s.set_cpu_ticks(w.counts.cpu_ticks);
      s.set_at_ms(static_cast<uint64_t>(at.count()));
      out.push_back(std::move(s));
    }
    lock.lock();
    published_ = std::move(out);
    // A late wake (the machine was busy, the agent stopped) does not catch up in a burst.
    next = std::max(next, std::chrono::steady_clock::now() - every_);
  }
}

// One look at each rank; a rank gone or a pid now another process's is dropped.
void RankSampler::look(std::map<int, Watched>& watched, const std::vector<TaskStart>& ranks) {
  std::map<int, Watched> next;
  std::map<int, stacks::ProcessLook> looks;  // by pid
  for (const TaskStart& t : ranks) {
    auto it = watched.find(t.pid);
    Watched w;
    if (it != watched.end() && it->second.start_ticks == t.start_ticks) {
      w = std::move(it->second);
    } else {
      w.rank = t.rank;
      w.start_ticks = t.start_ticks;
      const UniqueFd dir(
          ::open(("/proc/" + std::to_string(t.pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (dir) w.files.emplace(dir.get());
    }
    if (!w.files || !*w.files) continue;
    const auto l = w.files->look();
    if (!l || l->start_ticks != t.start_ticks) continue;
    looks.emplace(t.pid, *l);
    next.emplace(t.pid, std::move(w));
  }
  read_frames(next, looks);
  const auto now = Clock::now();
  for (auto& [pid, w] : next) {
    const stacks::ProcessLook& l = looks.at(pid);
    const auto said = w.said.find(l.syscall);
    const bool fresh = said != w.said.end() && now - said->second.second <= kFramesFresh;
    w.counts.add(l, fresh ? std::optional(said->second.first) : std::nullopt);
  }
  watched = std::move(next);
}

// Every kFramesEvery, the frames of the ranks that sleep now: what each
// waits on, kept by the syscall it sleeps in. Each read sits between two
// close looks: only a rank that slept through it, in one syscall, has its
// word taken (stacks::slept_through). A rank not read in time, or without
// Python frames, has the kernel's word in that syscall.
void RankSampler::read_frames(std::map<int, Watched>& watched,
                              const std::map<int, stacks::ProcessLook>& looks) {
  const auto now = Clock::now();
  if (now - frames_at_ < kFramesEvery) return;
  frames_at_ = now;
  std::vector<stacks::Target> targets;
  std::vector<stacks::ProcessLook> before;
  for (const auto& [pid, w] : watched) {
    const auto k = stacks::classify_look(looks.at(pid).state, looks.at(pid).syscall);
    if (k != stacks::Look::waiting && k != stacks::Look::elsewhere) continue;
    const auto l = w.files->look_closely();
    if (!l) continue;
    targets.push_back({pid, w.start_ticks, ::geteuid()});
    before.push_back(*l);
  }
  if (targets.empty()) return;
  stacks::ManyLimits limits;
  limits.deadline = std::chrono::milliseconds(50);
  limits.threads = 2;
  limits.each.max_kernel_threads = 0;  // the looks around the read say where the main thread sleeps
  limits.each.walk.max_frames = 64;
  limits.source_bytes = 1 << 20;
  limits.program_calls_only = true;
  const auto read = stacks::read_processes(targets, limits);
  for (size_t i = 0; i < read.size(); ++i) {
    Watched& w = watched.at(targets[i].pid);
    const stacks::ProcessStacks& p = read[i];
    const auto after = w.files->look_closely();
    // A read cut short (a busy node), or one the rank did not sleep through,
    // tells nothing new: the last word stands while it is fresh.
    if (!after || !stacks::slept_through(before[i], *after)) continue;
    if (p.no_python && (p.no_python->why == stacks::NoPython::over_time ||
                        p.no_python->why == stacks::NoPython::over_budget))
      continue;
    const int syscall = after->syscall;
    w.said.erase(syscall);
    if (p.no_python) continue;  // read whole, without Python: the kernel's word
    for (const auto& t : p.threads) {
      if (t.tid == p.pid) w.said[syscall] = {stacks::wait_kind(t.frames, t.call, syscall), now};
    }
  }
}

}  // namespace dp::agent
