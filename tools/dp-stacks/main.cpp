// dp-stacks: the merged Python stacks of processes given by pid, read from
// outside without stopping them (stacks/README.md); a debug command, and the
// view `dp-top --stacks` is to print for a step's ranks.
//   dp-stacks [--each] [--repeat N] [--time-ms N] PID[:RANK]...
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dp/params.hpp"
#include "dp/shown_value.hpp"
#include "dp/stacks/call_site.hpp"
#include "dp/stacks/kernel_view.hpp"
#include "dp/stacks/merge.hpp"
#include "dp/stacks/read_many.hpp"
#include "dp/stacks/read_process.hpp"

namespace {

const char* kUsage =
    "usage: dp-stacks [--each] [--repeat N] [--time-ms N] PID[:RANK]...\n"
    "       dp-stacks --help\n"
    "  prints the Python stacks of your own processes, read from outside without stopping\n"
    "  them (CPython 3.13+; other programs by their threads' kernel state), merged: ranks\n"
    "  whose stacks are identical share a line, the smallest groups first. A process's rank\n"
    "  is the one given after ':', else its place in the list.\n"
    "  --each       every thread of every process, not merged, and each read's time\n"
    "  --repeat N   read each process N times; --each prints the median read's time\n"
    "  --time-ms N  deadline of each process's read (default 250); merged, all are read\n"
    "               at once, 2 s for all\n";

struct Args {
  bool help = false;
  bool each = false;
  int repeat = 1;
  dp::stacks::ReadLimits limits;
  std::vector<std::pair<int, int>> pids;  // pid, rank
};

bool parse_args(int argc, char** argv, Args& a, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      a.help = true;
      return true;
    }
    if (arg == "--each") {
      a.each = true;
    } else if (arg == "--repeat" && i + 1 < argc) {
      auto n = dp::parse_whole_number(argv[++i], 1, 10'000);
      if (!n) return error = "--repeat: " + n.error().message, false;
      a.repeat = static_cast<int>(*n);
    } else if (arg == "--time-ms" && i + 1 < argc) {
      auto ms = dp::parse_whole_number(argv[++i], 1, 60'000);
      if (!ms) return error = "--time-ms: " + ms.error().message, false;
      a.limits.walk.time = std::chrono::milliseconds(*ms);
    } else {
      const size_t colon = arg.find(':');
      auto pid = dp::parse_whole_number(arg.substr(0, colon), 1, INT32_MAX);
      auto rank = colon == std::string::npos
                      ? dp::Result<long long>(static_cast<long long>(a.pids.size()))
                      : dp::parse_whole_number(arg.substr(colon + 1), 0, INT32_MAX);
      if (!pid || !rank) return error = "not a PID[:RANK]: " + arg, false;
      a.pids.emplace_back(static_cast<int>(*pid), static_cast<int>(*rank));
    }
  }
  if (a.pids.empty()) return error = "no PID given", false;
  return true;
}

// The process's own text (its thread names, functions, files), escaped as
// the merged view shows it (dp/shown_value.hpp).
std::string text(const std::string& s) { return dp::shown_value(s, 4096); }
std::string name(const std::string& s) { return dp::shown_name(s, 256); }

void print_each(const dp::stacks::ProcessStacks& p, double read_ms) {
  using namespace dp::stacks;
  if (p.no_python) {
    std::printf("pid %d: no Python frames (%s): %s, %.3f ms per read\n", p.pid,
                no_python_name(p.no_python->why), text(p.no_python->detail).c_str(), read_ms);
  } else {
    std::printf("pid %d: Python %s, %llu bytes in %llu reads, %.3f ms per read\n", p.pid,
                text(p.python).c_str(), static_cast<unsigned long long>(p.bytes_read),
                static_cast<unsigned long long>(p.reads), read_ms);
  }
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  for (const auto& t : p.threads) {
    std::printf("  thread %d", t.tid);
    if (t.kernel) {
      std::printf(" (%s) %s, cpu %.2f s", text(t.kernel->name).c_str(),
                  text(describe_kernel_thread(*t.kernel)).c_str(),
                  static_cast<double>(t.kernel->cpu_ticks) / tick);
    }
    std::printf("\n");
    if (!t.call.empty()) std::printf("      calls %s\n", name(t.call).c_str());
    for (const auto& f : t.frames) {
      std::printf("      %s %s:%d\n", name(f.function).c_str(), text(f.file).c_str(), f.line);
    }
    if (t.truncated) std::printf("      ...\n");
  }
}

// A pid that names no process is read anyway, to be reported as gone.
dp::stacks::Target target_of(int pid) {
  return dp::stacks::target_now(pid).value_or(dp::stacks::Target{pid, 0, ::geteuid()});
}

// One process after another, each read `repeat` times for its median time.
void read_each(const Args& args) {
  for (const auto& [pid, rank] : args.pids) {
    dp::stacks::ProcessStacks p;
    std::vector<double> took;
    // Learned once, as the node agent learns its ranks' when they start.
    const dp::stacks::Target target = target_of(pid);
    for (int i = 0; i < args.repeat; ++i) {
      const auto start = std::chrono::steady_clock::now();
      p = dp::stacks::read_process(target, args.limits);
      if (!p.no_python) dp::stacks::name_calls(p);  // as the node agent does, in the read's time
      took.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    // The median: the first read also pays for the page cache and this program's own start.
    std::nth_element(took.begin(), took.begin() + static_cast<long>(took.size() / 2), took.end());
    print_each(p, took[took.size() / 2]);
  }
}

// All at once within 2 s, as the node agent is to read its ranks, merged.
std::vector<std::string> read_merged(const Args& args, const std::string& host) {
  std::vector<dp::stacks::Target> targets;
  for (const auto& pid_rank : args.pids) targets.push_back(target_of(pid_rank.first));
  dp::stacks::ManyLimits many;
  many.each = args.limits;
  many.deadline = std::chrono::milliseconds(2000);
  auto answers = dp::stacks::read_processes(targets, many);
  std::vector<dp::stacks::RankStacks> ranks;
  for (size_t i = 0; i < answers.size(); ++i) {
    ranks.push_back({args.pids[i].second, host, std::move(answers[i])});
  }
  return dp::stacks::format_groups(dp::stacks::merge_stacks(ranks));
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::string error;
  if (!parse_args(argc, argv, args, error)) {
    std::fprintf(stderr, "dp-stacks: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (args.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string short_host(host);
  short_host = short_host.substr(0, short_host.find('.'));
  if (args.each) {
    read_each(args);
    return 0;
  }
  for (const auto& line : read_merged(args, short_host)) std::printf("%s\n", line.c_str());
  return 0;
}
