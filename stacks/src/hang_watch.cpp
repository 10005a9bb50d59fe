#include "dp/stacks/hang_watch.hpp"

#include <algorithm>
#include <set>

#include "dp/stacks/straggler_samples.hpp"

namespace dp::stacks {
namespace {

// The thread whose tid is the pid; nullptr when the read did not list it.
const ThreadStack* main_of(const ProcessStacks& p) {
  for (const auto& t : p.threads) {
    if (t.tid == p.pid) return &t;
  }
  return nullptr;
}

// Stopped by a signal or a debugger (a suspended job): not for this watch to judge.
bool stopped(const ThreadStack* main) {
  return main && main->kernel && (main->kernel->state == 'T' || main->kernel->state == 't');
}

// The rank waits on its own work (its input, a file, a sleep), not in a
// collective: where the others wait for it, the odd one out.
bool on_its_own(const RankStacks& r) {
  const ThreadStack* main = main_of(r.stacks);
  if (!main || !main->kernel) return false;
  return wait_kind(main->frames, main->call, main->kernel->syscall) != WaitKind::collective;
}

// The groups whose ranks wait on their own work lead when the others wait in
// a collective (issue 68): they are what the others wait for, not the
// smallest group of waiters. The lone such rank is the odd one out.
int own_work_first(std::vector<StackGroup>& groups, const std::vector<RankStacks>& ranks) {
  std::set<int> own;
  for (const auto& r : ranks)
    if (on_its_own(r)) own.insert(r.rank);
  if (own.empty() || own.size() == ranks.size()) return -1;
  std::stable_partition(groups.begin(), groups.end(),
                        [&](const StackGroup& g) { return own.count(g.ranks.front()) != 0; });
  return own.size() == 1 ? *own.begin() : -1;
}

}  // namespace

std::chrono::milliseconds hang_sample_every(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 8, std::chrono::milliseconds(1'000),
                    std::chrono::milliseconds(15'000));
}

HangWatch::HangWatch(std::chrono::milliseconds timeout, long ticks_per_second)
    : timeout_(timeout), ticks_per_second_(ticks_per_second > 0 ? ticks_per_second : 100) {}

bool HangWatch::progressed(const Seen& before, const Seen& now, double seconds) const {
  if (before.pid != now.pid) return true;
  const double busy =
      static_cast<double>(now.cpu_ticks - std::min(now.cpu_ticks, before.cpu_ticks)) /
      static_cast<double>(ticks_per_second_);
  if (busy >= kBusyShare * seconds) return true;
  if (now.main_cpu_ticks && before.main_cpu_ticks && *now.main_cpu_ticks > *before.main_cpu_ticks)
    return true;
  return !now.main_frames.empty() && !before.main_frames.empty() &&
         now.main_frames != before.main_frames;
}

std::optional<HangVerdict> HangWatch::observe(Clock::time_point now,
                                              const std::vector<RankStacks>& ranks, bool complete) {
  const double seconds =
      last_round_ ? std::chrono::duration<double>(now - *last_round_).count() : 0.0;
  bool progress = !last_round_ || ranks.empty();
  // A rank not read this round keeps its last state (no evidence either way).
  std::map<int, Seen> next = seen_;
  std::set<int> unknown;
  if (!complete)
    for (const auto& [r, s] : seen_) unknown.insert(r);
  for (const auto& r : ranks) {
    unknown.erase(r.rank);
    if (r.stacks.no_python && r.stacks.no_python->why == NoPython::over_time) {
      unknown.insert(r.rank);
      continue;
    }
    // A rank that exited is the step ending (or failing), not hanging.
    if (r.stacks.no_python && r.stacks.no_python->why == NoPython::gone) progress = true;
    const ThreadStack* main = main_of(r.stacks);
    if (stopped(main)) progress = true;
    Seen s{r.stacks.pid, r.stacks.cpu_ticks, std::nullopt, {}};
    if (main && main->kernel) s.main_cpu_ticks = main->kernel->cpu_ticks;
    if (main && !r.stacks.no_python) s.main_frames = frames_text(main->frames, main->truncated);
    auto before = seen_.find(r.rank);
    if (before == seen_.end() || progressed(before->second, s, seconds)) progress = true;
    next[r.rank] = std::move(s);
  }
  if (complete)  // the step's ranks are this round's: one that left is forgotten
    for (auto it = next.begin(); it != next.end();)
      it = std::any_of(ranks.begin(), ranks.end(),
                       [&](const RankStacks& r) { return r.rank == it->first; })
               ? std::next(it)
               : next.erase(it);
  seen_ = std::move(next);
  last_round_ = now;
  if (progress) {
    still_since_ = now;
    named_ = Named::none;
    return std::nullopt;
  }
  const auto still = std::chrono::duration_cast<std::chrono::milliseconds>(now - *still_since_);
  return verdict(still, ranks, {unknown.begin(), unknown.end()});
}

std::optional<HangVerdict> HangWatch::verdict(std::chrono::milliseconds still,
                                              const std::vector<RankStacks>& ranks,
                                              std::vector<int> unknown) {
  // A hang needs every rank read; unknown ranks are named after two bounds.
  if (named_ == Named::hang || still < timeout_) return std::nullopt;
  if (!unknown.empty() && (named_ == Named::unknown || still < 2 * timeout_)) return std::nullopt;
  named_ = unknown.empty() ? Named::hang : Named::unknown;
  HangVerdict v;
  v.still = still;
  v.unknown_ranks = std::move(unknown);
  auto groups = merge_stacks(ranks);
  const int odd = own_work_first(groups, ranks);
  v.lines = format_groups(groups);
  v.summary = hang_summary(groups, ranks);
  if (v.unknown()) {
    v.summary = "ranks " + rank_ranges(v.unknown_ranks) +
                " could not be read (their node did not answer, or their read did not end in "
                "time), so this is no hang verdict; the others: " +
                v.summary;
    return v;
  }
  if (odd >= 0 || (groups.size() > 1 && groups.front().ranks.size() == 1)) {
    v.odd_rank = groups.front().ranks.front();
    v.odd_host = groups.front().host;
  }
  return v;
}

std::string hang_summary(const std::vector<StackGroup>& groups,
                         const std::vector<RankStacks>& ranks) {
  const auto firsts = format_groups(groups);
  std::string s;
  for (const auto& line : firsts) {
    if (line.rfind("    ", 0) == 0) continue;  // a group's details
    s += (s.empty() ? "" : "; ") + line;
  }
  std::set<std::string> why;
  for (const auto& r : ranks) {
    if (r.stacks.no_python) why.insert(no_python_name(r.stacks.no_python->why));
  }
  if (!why.empty()) {
    std::string names;
    for (const auto& w : why) names += (names.empty() ? "" : ", ") + w;
    s += "; no Python frames (" + names + ")";
  }
  return s;
}

}  // namespace dp::stacks
