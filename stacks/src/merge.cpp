#include "dp/stacks/merge.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "dp/shown_value.hpp"
#include "dp/stacks/kernel_view.hpp"

namespace dp::stacks {
namespace {

// A rank's own text (function and file names, the call its source names, a
// mapped path in a reason) is shown escaped wherever it becomes a line of
// ours: names as an identifier holds them, every line printable ASCII
// (dp/shown_value.hpp), so a process cannot forge a slurm-dp: line or send
// a terminal escape to whoever reads its stacks.

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string kernel_text(const ThreadStack& t) {
  return t.kernel ? describe_kernel_thread(*t.kernel) : "state unknown";
}

// The main thread: the one whose tid is the pid, else the first listed.
const ThreadStack& main_thread(const ProcessStacks& p) {
  for (const auto& t : p.threads) {
    if (t.tid == p.pid) return t;
  }
  return p.threads.front();
}

// "thread: TEXT" or "3 threads: TEXT", in the order of TEXT.
void append_counted(const std::map<std::string, int>& counts, std::vector<std::string>& lines) {
  for (const auto& [text, n] : counts) {
    lines.push_back((n == 1 ? std::string("thread: ") : std::to_string(n) + " threads: ") + text);
  }
}

// A thread's frames, innermost first, behind what the innermost one calls
// (a C function has no Python frame): "time.sleep <- main hang.py:21".
std::string thread_text(const ThreadStack& t) {
  std::string s = frames_text(t.frames, t.truncated);
  return t.call.empty() ? s : shown_name(t.call, kShownNameBytes) + " <- " + s;
}

// The main thread's, behind the system call it sleeps in: [clock_nanosleep]
// for a time.sleep, [futex] or [poll] for a wait in a collective.
std::string main_line(const ThreadStack& main) {
  std::string s = thread_text(main);
  if (main.kernel && main.kernel->syscall >= 0 && main.kernel->state != 'R')
    s = "[" + syscall_name(main.kernel->syscall) + "] <- " + s;
  return s;
}

std::vector<std::string> python_identity(const ProcessStacks& p) {
  if (p.threads.empty()) return {"no Python threads (Python " + p.python + ")"};
  const ThreadStack& main = main_thread(p);
  std::vector<std::string> lines{main.frames.empty()
                                     ? "main thread without Python frames, " + kernel_text(main)
                                     : main_line(main)};
  std::map<std::string, int> others;
  for (const auto& t : p.threads) {
    if (&t != &main && !t.frames.empty()) ++others[thread_text(t)];
  }
  append_counted(others, lines);
  return lines;
}

std::vector<std::string> kernel_identity(const ProcessStacks& p) {
  const NoStacks& why = *p.no_python;
  if (p.threads.empty()) {
    return {std::string("no stacks (") + no_python_name(why.why) + "): " + why.detail};
  }
  const ThreadStack& main = main_thread(p);
  std::vector<std::string> lines{"main thread " + kernel_text(main)};
  std::map<std::string, int> others;
  for (const auto& t : p.threads) {
    if (&t != &main) ++others[kernel_text(t)];
  }
  append_counted(others, lines);
  lines.push_back(std::string("no Python frames (") + no_python_name(why.why) + "): " + why.detail);
  return lines;
}

std::vector<std::string> identity(const ProcessStacks& p) {
  return p.no_python ? kernel_identity(p) : python_identity(p);
}

}  // namespace

std::string frame_place(const Frame& f) {
  return shown_value(base_name(f.file), kShownNameBytes) + ":" +
         (f.line < 0 ? "?" : std::to_string(f.line));
}

std::string frames_text(const std::vector<Frame>& frames, bool truncated) {
  std::string s;
  for (const auto& f : frames) {
    if (!s.empty()) s += " <- ";
    s += shown_name(f.function, kShownNameBytes) + " " + frame_place(f);
  }
  if (truncated) s += s.empty() ? "..." : " <- ...";
  return s;
}

std::vector<StackGroup> merge_stacks(const std::vector<RankStacks>& ranks) {
  std::map<std::vector<std::string>, std::vector<const RankStacks*>> by_identity;
  for (const auto& r : ranks) by_identity[identity(r.stacks)].push_back(&r);
  std::vector<StackGroup> groups;
  for (auto& [lines, members] : by_identity) {
    std::sort(members.begin(), members.end(),
              [](const RankStacks* a, const RankStacks* b) { return a->rank < b->rank; });
    StackGroup g{{}, members.front()->host, members.front()->stacks.pid, lines};
    for (const RankStacks* m : members) g.ranks.push_back(m->rank);
    groups.push_back(std::move(g));
  }
  std::sort(groups.begin(), groups.end(), [](const StackGroup& a, const StackGroup& b) {
    return std::make_pair(a.ranks.size(), a.ranks.front()) <
           std::make_pair(b.ranks.size(), b.ranks.front());
  });
  return groups;
}

std::vector<std::string> format_groups(const std::vector<StackGroup>& groups) {
  std::vector<std::string> out;
  for (const auto& g : groups) {
    std::string who;
    if (g.ranks.size() == 1) {
      who = "rank " + std::to_string(g.ranks.front()) + " (" +
            (g.host.empty() ? "" : g.host + ", ") + "pid " + std::to_string(g.pid) + "): ";
    } else {
      who = "ranks " + rank_ranges(g.ranks) + ": ";
    }
    out.push_back(shown_value(who + g.lines.front(), kShownLineBytes));
    for (size_t i = 1; i < g.lines.size(); ++i)
      out.push_back(shown_value("    " + g.lines[i], kShownLineBytes));
  }
  return out;
}

}  // namespace dp::stacks
