#include "stacks_message.hpp"

#include <algorithm>
#include <array>

namespace dp::rdv {
namespace {

using stacks::NoPython;

void fill_kernel(const stacks::KernelThread& k, proto::KernelThread& m, const StackCaps& caps) {
  m.set_name(capped_text(k.name, caps.text_bytes));
  m.set_state(static_cast<unsigned char>(k.state));
  m.set_cpu_ticks(k.cpu_ticks);
  m.set_wchan(capped_text(k.wchan, caps.text_bytes));
  m.set_syscall(k.syscall);
}

void fill_thread(const stacks::ThreadStack& t, proto::ThreadStack& m, const StackCaps& caps) {
  m.set_tid(t.tid);
  const size_t n = std::min(t.frames.size(), caps.frames_per_thread);
  for (size_t i = 0; i < n; ++i) {
    auto* f = m.add_frames();
    f->set_function(capped_text(t.frames[i].function, caps.text_bytes));
    f->set_file(capped_text(t.frames[i].file, caps.text_bytes));
    f->set_line(t.frames[i].line);
  }
  m.set_truncated(t.truncated || n < t.frames.size());
  if (n > 0) m.set_call(capped_text(t.call, caps.text_bytes));
  if (t.kernel) fill_kernel(*t.kernel, *m.mutable_kernel(), caps);
}

constexpr std::array kReasons{
    NoPython::not_allowed, NoPython::gone,          NoPython::unreadable,
    NoPython::not_python,  NoPython::no_runtime,    NoPython::unsupported_python,
    NoPython::debug_build, NoPython::free_threaded, NoPython::inconsistent,
    NoPython::over_budget, NoPython::over_time};

stacks::NoStacks reason_of(const std::string& name, const std::string& detail) {
  for (NoPython why : kReasons)
    if (name == stacks::no_python_name(why)) return {why, detail};
  return {NoPython::inconsistent, "unknown reason \"" + capped_text(name, 64) + "\": " + detail};
}

}  // namespace

std::string capped_text(const std::string& s, size_t most) {
  return s.size() <= most ? s : s.substr(0, most) + "...";
}

proto::RankStacks rank_message(int rank, const stacks::ProcessStacks& p, const StackCaps& caps) {
  proto::RankStacks m;
  m.set_rank(rank);
  m.set_pid(p.pid);
  m.set_python(capped_text(p.python, caps.text_bytes));
  if (p.no_python) {
    m.set_no_python(stacks::no_python_name(p.no_python->why));
    m.set_no_python_detail(capped_text(p.no_python->detail, 4 * caps.text_bytes));
  }
  const size_t n = std::min(p.threads.size(), caps.threads_per_rank);
  for (size_t i = 0; i < n; ++i) fill_thread(p.threads[i], *m.add_threads(), caps);
  m.set_threads_cut(n < p.threads.size());
  m.set_cpu_ticks(p.cpu_ticks);
  return m;
}

proto::StacksAnswer stacks_answer(uint64_t ask, const NodeStacks& ranks, StackCaps caps) {
  while (true) {
    proto::StacksAnswer a;
    a.set_ask(ask);
    for (const auto& [rank, p] : ranks) *a.add_ranks() = rank_message(rank, p, caps);
    if (a.ByteSizeLong() <= caps.answer_bytes) return a;
    if (caps.frames_per_thread == 0) {
      // Even kernel threads alone do not fit: fewer threads, then none.
      if (caps.threads_per_rank == 0) {
        a.clear_ranks();
        return a;
      }
      caps.threads_per_rank /= 2;
      continue;
    }
    caps.frames_per_thread /= 2;
  }
}

stacks::RankStacks rank_stacks(const proto::RankStacks& m, const std::string& host) {
  stacks::RankStacks r;
  r.rank = m.rank();
  r.host = host;
  r.stacks.pid = m.pid();
  r.stacks.python = m.python();
  r.stacks.cpu_ticks = m.cpu_ticks();
  if (!m.no_python().empty()) r.stacks.no_python = reason_of(m.no_python(), m.no_python_detail());
  for (const auto& t : m.threads()) {
    stacks::ThreadStack ts;
    ts.tid = t.tid();
    for (const auto& f : t.frames()) ts.frames.push_back({f.function(), f.file(), f.line()});
    ts.truncated = t.truncated();
    if (!ts.frames.empty()) ts.call = t.call();
    if (t.has_kernel()) {
      const auto& k = t.kernel();
      ts.kernel = stacks::KernelThread{
          0, k.name(), static_cast<char>(k.state() & 0xff), k.cpu_ticks(), k.wchan(), k.syscall()};
      ts.kernel->tid = t.tid();
    }
    r.stacks.threads.push_back(std::move(ts));
  }
  return r;
}

}  // namespace dp::rdv
