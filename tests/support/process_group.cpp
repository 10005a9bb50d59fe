#include "process_group.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace dp::test {

namespace {

std::vector<std::string> merged_env(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    if (env.count(key) == 0) out.push_back(kv);
  }
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Child spawn(const std::vector<std::string>& argv_in, const std::map<std::string, std::string>& env,
            const std::string& log) {
  std::vector<std::string> argv = argv_in;
  std::vector<std::string> envv = merged_env(env);
  auto cargv = c_strings(argv);
  auto cenv = c_strings(envv);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  Child c;
  c.log = log;
  if (posix_spawn(&c.pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data()) != 0) c.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return c;
}

bool wait_all(std::vector<Child>& kids, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    bool pending = false;
    for (auto& k : kids) {
      if (k.status || k.pid <= 0) continue;
      int st = 0;
      pid_t r = waitpid(k.pid, &st, WNOHANG);
      if (r == k.pid) {
        k.status = st;
      } else {
        pending = true;
      }
    }
    if (!pending) return true;
    if (std::chrono::steady_clock::now() > deadline) {
      for (auto& k : kids) {
        if (!k.status && k.pid > 0) {
          kill(k.pid, SIGKILL);
          int st = 0;
          waitpid(k.pid, &st, 0);
          k.status = st;
        }
      }
      return false;
    }
    usleep(10'000);  // polling interval, not synchronisation: the deadline decides
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool wait_for_text(const std::string& path, const std::string& text,
                   std::chrono::steady_clock::time_point deadline) {
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file(path).find(text) != std::string::npos) return true;
    usleep(10'000);
  }
  return read_file(path).find(text) != std::string::npos;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "dp-rt-XXXXXX").string();
  if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::optional<Daemon> Daemon::start(const std::string& built, int world_size,
                                    const std::string& secret, std::string* error) {
  // A test binary run outside its build tree (scripts/gpu-check's bundle on
  // a GPU machine) is told where the daemon is instead.
  const char* moved = std::getenv("DP_TEST_RENDEZVOUSD");
  const std::string binary = moved && *moved ? moved : built;
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    *error = "pipe failed";
    return std::nullopt;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  std::vector<std::string> argv = {
      binary, "--world-size", std::to_string(world_size), "--job-id", "7", "--step-id", "0"};
  auto cargv = c_strings(argv);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, binary.c_str(), &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    *error = "cannot start " + binary + ": " + std::strerror(rc);
    return std::nullopt;
  }
  std::string line = secret + "\n";
  (void)!write(in[1], line.data(), line.size());
  close(in[1]);
  std::string got;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[128];
    ssize_t n = read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  int port = 0;
  if (std::sscanf(got.c_str(), "READY %d", &port) != 1) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    *error = "dp-rendezvousd did not report READY: '" + got + "'";
    return std::nullopt;
  }
  return Daemon(pid, port);
}

Daemon::~Daemon() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  Child c;
  c.pid = pid_;
  std::vector<Child> kids{c};
  wait_all(kids, std::chrono::steady_clock::now() + std::chrono::seconds(5));
}

}  // namespace dp::test
