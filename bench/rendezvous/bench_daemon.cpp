#include "bench_daemon.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "daemon_contract.hpp"

namespace dp::bench {

const std::string kSecret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

Daemon start_daemon(const std::string& path, int world, int nodes, int64_t heartbeat_ms) {
  dp::daemon::LaunchArgs la;
  la.world_size = world;
  la.job_id = "bench";
  la.step_id = "0";
  la.nodes = nodes;
  la.listen = "127.0.0.1";
  la.step_nodes_on_stdin = nodes > 0;
  la.heartbeat_timeout_ms = heartbeat_ms;
  std::vector<std::string> args = dp::daemon::format_arguments(la);
  args.insert(args.begin(), path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) std::exit(1);
  Daemon d;
  d.pid = fork();
  if (d.pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  const std::string s =
      kSecret + "\n" + (nodes > 0 ? dp::daemon::format_addresses("", bench_nodes(nodes)) : "");
  if (write(in[1], s.data(), s.size()) < 0) std::exit(1);
  close(in[1]);
  std::string line;
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  close(out[0]);
  auto answer = dp::daemon::parse_answer(line);
  if (!answer) {
    std::fprintf(stderr, "daemon did not start: %s\n", answer.error().message.c_str());
    std::exit(1);
  }
  d.port = static_cast<uint16_t>(answer->port);
  return d;
}

long vm_hwm_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (f >> key) {
    if (key == "VmHWM:") {
      long v = 0;
      f >> v;
      return v;
    }
  }
  return -1;
}

double cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close_paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

uint32_t source_address(int index, bool node) {
  const uint32_t host = static_cast<uint32_t>(index % (node ? 60000 : 4096) + 1);
  return (127u << 24) | (1u << 16) | host;
}

std::vector<std::string> bench_nodes(int nodes) {
  std::vector<std::string> out;
  for (int i = 0; i < std::min(nodes, 60000); ++i) {
    const uint32_t a = source_address(i, true);
    out.push_back(std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
                  std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255));
  }
  return out;
}

int connect_from(int index, bool node, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Real ranks come from many hosts. From one source address, 16 384
  // connections to one port exhaust the ephemeral range and connect() spends
  // its time searching for a free port, so each connection takes a source
  // address of its own in 127.0.0.0/8 and lets connect() pick the port.
  setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  src.sin_addr.s_addr = htonl(source_address(index, node));
  bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  return fd;
}

}  // namespace dp::bench
