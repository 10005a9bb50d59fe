// Reading live processes: every Python from 3.8 to 3.14 that runs here
// (Debian 12's 3.11; 3.13 and 3.14 in the Debian 13 and testing roots;
// skipped elsewhere, saying so), compared with the standard library's own
// reader where it has one (3.14's _remote_debugging); a debug build, a native
// program, this test itself; and the policy: another user's process, an
// ended one, a pid that names another process.
#include "dp/stacks/read_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "dp/stacks/call_site.hpp"
#include "dp/stacks/kernel_view.hpp"
#include "process_group.hpp"

namespace dp::stacks {
namespace {

using namespace std::chrono_literals;

// Line numbers the tests expect frames on.
constexpr int kBlockedLine = 5, kSleepLine = 12, kCallLine = 14;
const char* kScript =
    "import sys, threading, time\n"
    "\n"
    "def blocked(ready):\n"
    "    ready.set()\n"
    "    threading.Event().wait()\n"
    "\n"
    "def sleeper():\n"
    "    ready = threading.Event()\n"
    "    threading.Thread(target=blocked, args=(ready,), name='blocker', daemon=True).start()\n"
    "    ready.wait()\n"
    "    print('ready', flush=True)\n"
    "    time.sleep(600)\n"
    "\n"
    "sleeper()\n";

std::string find_program(const std::string& name) {
  std::string path = ::getenv("PATH") ? ::getenv("PATH") : "/usr/bin";
  std::istringstream dirs(path + ":/usr/bin:/usr/local/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string p = dir + "/" + name;
    if (!dir.empty() && ::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// An interpreter named `name` that runs (a pyenv shim of a version not
// selected is found but fails). Asked once per name.
std::string find_python(const std::string& name) {
  static std::map<std::string, std::string> found;
  if (auto it = found.find(name); it != found.end()) return it->second;
  std::string python = find_program(name);
  if (!python.empty()) {
    test::Child c = test::spawn({python, "-c", "import sys"}, {}, "/dev/null");
    int status = -1;
    if (c.pid > 0) ::waitpid(c.pid, &status, 0);
    if (status != 0) python.clear();
  }
  return found[name] = python;
}

// A child process, killed and reaped (by its pid) when the test ends.
struct Running {
  test::Child child;
  ~Running() {
    if (child.pid > 0) {
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, nullptr, 0);
    }
  }
};

ProcessStacks read_now(int pid) {
  auto target = target_now(pid);
  EXPECT_TRUE(target) << "pid " << pid;
  return read_process(target.value_or(Target{pid, 0, ::geteuid()}), {});
}

class PythonScript {
 public:
  explicit PythonScript(const std::string& python) {
    script_ = dir_.path() + "/hang.py";
    std::ofstream(script_) << kScript;
    run_.child = test::spawn({python, script_}, {}, dir_.path() + "/out.log");
    ready_ = test::wait_for_text(dir_.path() + "/out.log", "ready",
                                 std::chrono::steady_clock::now() + 20s);
  }
  bool ready() const { return ready_; }
  int pid() const { return run_.child.pid; }
  const std::string& script() const { return script_; }

  // Reads until the main thread is in its sleep (it printed just before)
  // and the blocker in the futex of its wait (it set `ready` just before).
  ProcessStacks read_sleeping() {
    ProcessStacks s;
    for (int i = 0; i < 100; ++i) {
      s = read_now(pid());
      if (!s.no_python && s.threads.size() >= 2 && !s.threads[0].frames.empty() &&
          s.threads[0].frames[0].line == kSleepLine && s.threads[1].kernel &&
          syscall_name(s.threads[1].kernel->syscall) == "futex") {
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    return s;
  }

 private:
  test::TempDir dir_;
  std::string script_;
  Running run_;
  bool ready_ = false;
};

class LivePython : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    python_ = find_python(GetParam());
    if (python_.empty()) {
      GTEST_SKIP() << "no " << GetParam() << " runs here (Debian 12 has 3.11, the Debian 13 and "
                   << "testing roots 3.13 and 3.14); RecordedImage reads every version from "
                   << "recordings, live_roots.sh each live where its root is built";
    }
  }
  std::string python_;
};

TEST_P(LivePython, ReadsASleepingMainThreadAndABlockedThread) {
  PythonScript py(python_);
  ASSERT_TRUE(py.ready());
  const ProcessStacks s = py.read_sleeping();
  ASSERT_FALSE(s.no_python) << s.no_python->detail;
  EXPECT_EQ(s.python.substr(0, 4), std::string(GetParam()).substr(6, 4));
  ASSERT_GE(s.threads.size(), 2u);
  const ThreadStack& main = s.threads[0];
  EXPECT_EQ(main.tid, py.pid());
  EXPECT_EQ(main.frames, (std::vector<Frame>{{"sleeper", py.script(), kSleepLine},
                                             {"<module>", py.script(), kCallLine}}));
  ASSERT_TRUE(main.kernel);
  EXPECT_EQ(main.kernel->state, 'S');
  EXPECT_EQ(syscall_name(main.kernel->syscall), "clock_nanosleep");
  const ThreadStack& blocker = s.threads[1];
  ASSERT_TRUE(blocker.kernel);
  if (s.python.rfind("3.14", 0) == 0) {
    EXPECT_EQ(blocker.kernel->name, "blocker");  // 3.14 names its threads
  }
  EXPECT_EQ(syscall_name(blocker.kernel->syscall), "futex");
  auto in_blocked = std::find(blocker.frames.begin(), blocker.frames.end(),
                              Frame{"blocked", py.script(), kBlockedLine});
  ASSERT_NE(in_blocked, blocker.frames.end());
  EXPECT_EQ(blocker.frames.front().function, "Condition.wait");
  EXPECT_GT(s.bytes_read, 0u);
}

// What each innermost frame calls, named from the source its instruction spans.
TEST_P(LivePython, NamesTheCallsTheInnermostFramesWaitIn) {
  PythonScript py(python_);
  ASSERT_TRUE(py.ready());
  ProcessStacks s = py.read_sleeping();
  ASSERT_FALSE(s.no_python) << s.no_python->detail;
  ASSERT_GE(s.threads.size(), 2u);
  ASSERT_TRUE(s.threads[0].innermost_at);
  EXPECT_EQ(s.threads[0].innermost_at->line, kSleepLine);
  name_calls(s);
  EXPECT_EQ(s.threads[0].call, "time.sleep");
  EXPECT_EQ(s.threads[1].call, "waiter.acquire");  // Condition.wait, in threading.py
}

// _remote_debugging's threads: "T tid" then "F function|file|line" per frame.
std::string reference_trace(const std::string& python, int pid, test::TempDir& dir) {
  const std::string code =
      "import sys\n"
      "try:\n"
      "    import _remote_debugging as rd\n"
      "except ImportError:\n"
      "    sys.exit(77)\n"
      "for t in rd.RemoteUnwinder(int(sys.argv[1]), all_threads=True).get_stack_trace():\n"
      "    print('T', t.thread_id)\n"
      "    for f in t.frame_info:\n"
      "        print('F %s|%s|%d' % (f.funcname, f.filename, f.lineno))\n";
  Running ref{test::spawn({python, "-c", code, std::to_string(pid)}, {}, dir.path() + "/ref.log")};
  int status = 0;
  ::waitpid(ref.child.pid, &status, 0);
  ref.child.pid = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 77) return "";
  return test::read_file(dir.path() + "/ref.log");
}

TEST_P(LivePython, AgreesWithTheStandardLibrarysReader) {
  PythonScript py(python_);
  ASSERT_TRUE(py.ready());
  const ProcessStacks ours = py.read_sleeping();
  test::TempDir dir;
  const std::string ref = reference_trace(python_, py.pid(), dir);
  if (ref.empty()) GTEST_SKIP() << GetParam() << " has no _remote_debugging (3.14 and later)";
  std::istringstream lines(ref);
  const ThreadStack* thread = nullptr;
  size_t at = 0, frames = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("T ", 0) == 0) {
      const int tid = std::stoi(line.substr(2));
      thread = nullptr;
      at = 0;
      for (const auto& t : ours.threads) thread = t.tid == tid ? &t : thread;
      ASSERT_TRUE(thread) << "thread " << tid << " is not in ours";
    } else if (line.rfind("F ", 0) == 0 && thread) {
      // The reference stops at a C boundary (Context.run under Thread.run); ours
      // goes on: its frames are the first of ours.
      ASSERT_LT(at, thread->frames.size()) << line;
      const Frame& f = thread->frames[at++];
      EXPECT_EQ("F " + f.function + "|" + f.file + "|" + std::to_string(f.line), line);
      ++frames;
    }
  }
  EXPECT_GE(frames, 5u) << ref;
}

INSTANTIATE_TEST_SUITE_P(Python, LivePython,
                         testing::Values("python3.8", "python3.9", "python3.10", "python3.11",
                                         "python3.12", "python3.13", "python3.14"));

// A debug build keeps its objects otherwise: named, its threads still shown
// by their kernel state, none of its structs read as a release build's.
TEST(ReadProcess, ADebugBuildIsNamedAndShownByItsThreads) {
  const std::string python = find_python("python3.11-dbg");
  if (python.empty()) GTEST_SKIP() << "no python3.11-dbg here (scripts/setup installs it)";
  PythonScript py(python);
  ASSERT_TRUE(py.ready());
  const ProcessStacks s = read_now(py.pid());
  ASSERT_TRUE(s.no_python);
  EXPECT_EQ(s.no_python->why, NoPython::debug_build) << s.no_python->detail;
  EXPECT_NE(s.no_python->detail.find("3.11"), std::string::npos) << s.no_python->detail;
  EXPECT_LE(s.bytes_read, 24u);  // _PyRuntime's head and Py_Version, no struct
  ASSERT_GE(s.threads.size(), 2u);
  EXPECT_EQ(s.threads[0].tid, py.pid());
  EXPECT_TRUE(s.threads[0].frames.empty());
  EXPECT_TRUE(s.threads[1].kernel);
}

TEST(ReadProcess, ANativeProgramIsNotPython) {
  Running sleep{test::spawn({find_program("sleep"), "30"}, {}, "/dev/null")};
  ProcessStacks s;
  for (int i = 0; i < 100; ++i) {  // until it has exec'd sleep and sleeps
    s = read_now(sleep.child.pid);
    if (!s.threads.empty() && s.threads[0].kernel && s.threads[0].kernel->state == 'S') break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(s.no_python);
  EXPECT_EQ(s.no_python->why, NoPython::not_python);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(syscall_name(s.threads[0].kernel->syscall), "clock_nanosleep");
}

// An exec keeps the pid and its start time but is a new program image: what
// reads of the Python before learned (its interpreter, its types) is not used
// for what runs after, a native program here.
TEST(ReadProcess, AnExecIsANewImageOfTheSamePid) {
  const std::string python = find_python("python3");
  if (python.empty()) GTEST_SKIP() << "no python3 here";
  test::TempDir dir;
  const std::string log = dir.path() + "/out.log";
  Running py{test::spawn({python, "-c",
                          "import os, signal\n"
                          "signal.signal(signal.SIGUSR1, lambda *_: os.execv('" +
                              find_program("sleep") +
                              "', ['sleep', '600']))\n"
                              "print('ready', flush=True)\n"
                              "while True: signal.pause()\n"},
                         {}, log)};
  ASSERT_TRUE(test::wait_for_text(log, "ready", std::chrono::steady_clock::now() + 20s));
  const auto target = target_now(py.child.pid);
  ASSERT_TRUE(target);
  auto stat_now = [&] {
    std::ifstream f("/proc/" + std::to_string(py.child.pid) + "/stat");
    return parse_task_stat(std::string(std::istreambuf_iterator<char>(f), {}));
  };
  const auto before = stat_now();
  ASSERT_TRUE(before);
  EXPECT_NE(before->image_marks, decltype(before->image_marks){});
  for (int i = 0; i < 2; ++i) {  // the second read from what the first learned
    const ProcessStacks s = read_process(*target, {});
    ASSERT_FALSE(s.no_python) << s.no_python->detail;
    ASSERT_FALSE(s.threads.empty());
    EXPECT_FALSE(s.threads[0].frames.empty());
  }
  ASSERT_EQ(::kill(py.child.pid, SIGUSR1), 0);
  const std::string exe = "/proc/" + std::to_string(py.child.pid) + "/exe";
  for (int i = 0; i < 500 && std::filesystem::read_symlink(exe).filename() != "sleep"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(std::filesystem::read_symlink(exe).filename(), "sleep");
  const auto after = stat_now();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->start_ticks, before->start_ticks);
  EXPECT_NE(after->image_marks, before->image_marks);
  const ProcessStacks s = read_process(*target, {});
  ASSERT_TRUE(s.no_python);
  EXPECT_EQ(s.no_python->why, NoPython::not_python) << s.no_python->detail;
}

TEST(ReadProcess, ThisTestIsReadByItsThreads) {
  const ProcessStacks s = read_now(::getpid());
  ASSERT_TRUE(s.no_python);
  EXPECT_EQ(s.no_python->why, NoPython::not_python);
  ASSERT_FALSE(s.threads.empty());
  EXPECT_EQ(s.threads[0].tid, ::getpid());
}

TEST(ReadProcess, AnotherUsersProcessIsNotRead) {
  auto self = target_now(::getpid());
  ASSERT_TRUE(self);
  Target other = *self;
  other.uid += 1;
  const ProcessStacks s = read_process(other, {});
  ASSERT_TRUE(s.no_python);
  EXPECT_EQ(s.no_python->why, NoPython::not_allowed);
  EXPECT_TRUE(s.threads.empty());
  EXPECT_EQ(s.bytes_read, 0u);
  if (::geteuid() != 0) GTEST_SKIP() << "the rest needs root, to start another user's process";
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) == 0 && ::setuid(65534) == 0) ::execlp("sleep", "sleep", "30", nullptr);
    ::_exit(127);
  }
  Running nobody{{child, "", std::nullopt}};
  std::this_thread::sleep_for(100ms);
  auto target = target_now(child);
  ASSERT_TRUE(target);
  EXPECT_EQ(target->uid, 65534u);
  EXPECT_EQ(read_process(*target, {}).no_python->why,
            NoPython::not_allowed);  // root reads only root's
  target->uid = 0;                   // a caller mistaken about it
  const ProcessStacks claimed = read_process(*target, {});
  EXPECT_EQ(claimed.no_python->why, NoPython::not_allowed) << claimed.no_python->detail;
  EXPECT_EQ(claimed.bytes_read, 0u);
}

TEST(ReadProcess, AnEndedOrReusedPidIsGone) {
  auto self = target_now(::getpid());
  ASSERT_TRUE(self);
  Target reused = *self;
  reused.start_ticks += 1;
  EXPECT_EQ(read_process(reused, {}).no_python->why, NoPython::gone);
  Running ended{test::spawn({find_program("true"), "0"}, {}, "/dev/null")};
  ::waitpid(ended.child.pid, nullptr, 0);
  const int pid = ended.child.pid;
  ended.child.pid = -1;
  EXPECT_EQ(read_process(Target{pid, self->start_ticks, self->uid}, {}).no_python->why,
            NoPython::gone);
}

}  // namespace
}  // namespace dp::stacks
