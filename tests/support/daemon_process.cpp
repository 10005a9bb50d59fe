#include "daemon_process.hpp"

#include <gtest/gtest.h>

#include "hello_proof.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <sstream>

#include "frame_codec.hpp"

namespace dp::test {
namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point d) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// Forks the daemon with stdin/stdout as pipes and stderr to a file.
pid_t spawn(const std::vector<std::string>& args, int& in_w, int& out_r,
            const std::string& log_path, const std::optional<rlimit>& nofile = {}) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    if (nofile && setrlimit(RLIMIT_NOFILE, &*nofile) != 0) _exit(126);
    dup2(in[0], 0);
    dup2(out[1], 1);
    const int log =
        open(log_path.empty() ? "/dev/null" : log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (log >= 0) dup2(log, 2);
    std::vector<char*> argv;
    std::string bin = DP_RENDEZVOUSD_PATH;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  in_w = in[1];
  out_r = out[0];
  return pid;
}

std::string read_line(int fd, Clock::time_point deadline) {
  std::string line;
  char c;
  while (line.size() < 4096) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, ms_left(deadline)) <= 0) break;
    if (read(fd, &c, 1) != 1) break;
    if (c == '\n') break;
    line.push_back(c);
  }
  return line;
}

}  // namespace

DaemonProcess::DaemonProcess(int world_size, std::vector<std::string> extra, std::string secret) {
  char tmpl[] = "/tmp/dp-rdv-test-log-XXXXXX";
  const int lf = mkstemp(tmpl);
  if (lf >= 0) close(lf);
  log_path_ = tmpl;
  std::vector<std::string> args = {
      "--world-size", std::to_string(world_size), "--job-id", "42", "--step-id", "0", "--listen",
      "127.0.0.1"};
  args.insert(args.end(), extra.begin(), extra.end());
  int in_w = -1, out_r = -1;
  pid_ = spawn(args, in_w, out_r, log_path_);
  if (pid_ < 0) return;
  secret += "\n";
  [[maybe_unused]] ssize_t n = write(in_w, secret.data(), secret.size());
  close(in_w);
  line_ = read_line(out_r, Clock::now() + std::chrono::seconds(10));
  close(out_r);
  if (line_.rfind("READY ", 0) == 0) port_ = static_cast<uint16_t>(std::atoi(line_.c_str() + 6));
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGTERM);
    if (!wait_exit(std::chrono::seconds(5))) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

std::optional<int> DaemonProcess::wait_exit(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return status;
    }
    if (r < 0 || Clock::now() >= deadline) return std::nullopt;
    usleep(10'000);  // polling a child's exit; the deadline bounds it
  }
}

bool DaemonProcess::running() { return !reaped_ && waitpid(pid_, nullptr, WNOHANG) == 0; }

std::string DaemonProcess::log() const {
  std::ifstream f(log_path_);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ClientOptions DaemonProcess::client_options(int rank, int world_size, PeerRole role) const {
  ClientOptions o;
  o.host = "127.0.0.1";
  o.port = port_;
  o.secret = kSecret;
  o.role = role;
  o.rank = rank;
  o.world_size = world_size;
  o.hostname = "testhost" + std::to_string(rank);
  o.connect_timeout = std::chrono::milliseconds(5'000);
  o.call_timeout = std::chrono::milliseconds(10'000);
  o.heartbeat_interval = std::chrono::milliseconds(200);
  return o;
}

std::pair<int, std::string> run_daemon_once(const std::vector<std::string>& args,
                                            const std::string& stdin_text,
                                            const std::optional<rlimit>& nofile) {
  int in_w = -1, out_r = -1;
  const pid_t pid = spawn(args, in_w, out_r, "", nofile);
  // A daemon that refuses its arguments may exit before it reads stdin: the
  // write then fails with EPIPE instead of killing the test with SIGPIPE.
  const auto old = signal(SIGPIPE, SIG_IGN);
  [[maybe_unused]] ssize_t n = write(in_w, stdin_text.data(), stdin_text.size());
  signal(SIGPIPE, old);
  close(in_w);
  const std::string line = read_line(out_r, Clock::now() + std::chrono::seconds(10));
  close(out_r);
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);  // it started after all: do not leave it behind
      waitpid(pid, &status, 0);
      break;
    }
    usleep(5'000);
  }
  return {status, line};
}

std::unique_ptr<RendezvousClient> must_connect(const ClientOptions& o) {
  auto c = RendezvousClient::connect(o);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return c.ok() ? std::move(*c) : nullptr;
}

std::unique_ptr<RendezvousClient> connect_rank(const DaemonProcess& d, int rank, int world) {
  if (!d.ready()) {
    ADD_FAILURE() << "the daemon did not start: " << d.first_line();
    return nullptr;
  }
  return must_connect(d.client_options(rank, world));
}

namespace {

// The daemon's stats dump as c reads it; a failed query is a test failure
// (and an empty text, which then matches nothing).
std::string stats_text(RendezvousClient& c) {
  auto s = c.stats();
  if (!s.ok()) {
    ADD_FAILURE() << "stats: " << s.error().message;
    return {};
  }
  return s->text;
}

}  // namespace

void expect_stats(RendezvousClient& c, const std::vector<std::string>& has,
                  const std::vector<std::string>& lacks) {
  const std::string s = stats_text(c);
  for (const std::string& part : has) EXPECT_NE(s.find(part), std::string::npos) << s;
  for (const std::string& part : lacks) EXPECT_EQ(s.find(part), std::string::npos) << s;
}

bool daemon_holds_a_pending_call(RendezvousClient& c, std::chrono::milliseconds limit) {
  return poll_until(
      [&] {
        auto s = c.stats();
        return s.ok() && s->text.find("pending_calls 1") != std::string::npos;
      },
      limit);
}

bool poll_until(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    usleep(5'000);
  }
  return pred();
}

std::string frame_of(const proto::Request& r) {
  std::string s;
  rdv::append_frame(r, s);
  return s;
}

RawConn::RawConn(uint16_t port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd_);
    fd_ = -1;
    return;
  }
  // The daemon speaks first: the challenge of this connection (or a refusal,
  // which the next read_response() returns).
  auto first = read_response(std::chrono::milliseconds(5'000));
  if (first && first->id() == 0 && !first->challenge().empty()) {
    nonce_ = first->challenge();
  } else {
    early_ = first;
  }
}

RawConn::~RawConn() {
  if (fd_ >= 0) close(fd_);
}

bool RawConn::send_bytes(const std::string& b) {
  return fd_ >= 0 &&
         ::send(fd_, b.data(), b.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(b.size());
}

bool RawConn::send_request(const proto::Request& r) { return send_bytes(frame_of(r)); }

proto::Request hello_request(const std::string& nonce, const std::string& secret, int rank,
                             proto::Role role, const std::string& host, uint32_t version) {
  proto::Request r;
  r.set_id(1);
  auto* h = r.mutable_hello();
  h->set_protocol_version(version);
  h->set_rank(rank);
  h->set_role(role);
  h->set_host(host);
  h->set_proof(rdv::hello_proof(secret, nonce, role, rank, 0, host));
  return r;
}

bool RawConn::hello(const std::string& secret, int rank, proto::Role role, uint32_t version) {
  if (!send_request(hello_request(nonce_, secret, rank, role, "rawhost", version))) return false;
  auto resp = read_response();
  return resp && resp->code() == proto::OK;
}

bool RawConn::node_hello(const std::vector<int32_t>& ranks, const std::string& host,
                         const std::string& secret) {
  proto::Request r = hello_request(nonce_, secret, 0, proto::ROLE_NODE, host);
  for (int32_t x : ranks) r.mutable_hello()->add_node_ranks(x);
  r.mutable_hello()->set_proof(rdv::hello_proof(secret, nonce_, proto::ROLE_NODE, 0, 0, host,
                                                std::span<const int32_t>(ranks)));
  if (!send_request(r)) return false;
  auto resp = read_response();
  return resp && resp->code() == proto::OK;
}

std::optional<proto::Response> RawConn::read_response(std::chrono::milliseconds limit) {
  if (early_) {
    auto r = std::move(early_);
    early_.reset();
    return r;
  }
  const auto deadline = Clock::now() + limit;
  for (;;) {
    if (buf_.size() >= 4) {
      const auto* p = reinterpret_cast<const unsigned char*>(buf_.data());
      const uint32_t len =
          (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
      if (buf_.size() >= 4 + len) {
        proto::Response r;
        const bool ok = r.ParseFromArray(buf_.data() + 4, static_cast<int>(len));
        buf_.erase(0, 4 + len);
        if (!ok) return std::nullopt;
        return r;
      }
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, ms_left(deadline)) <= 0) return std::nullopt;
    char b[65536];
    const ssize_t n = recv(fd_, b, sizeof b, 0);
    if (n <= 0) return std::nullopt;
    buf_.append(b, static_cast<size_t>(n));
  }
}

bool RawConn::closed_by_peer(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, ms_left(deadline)) <= 0) return false;
    char b[4096];
    const ssize_t n = recv(fd_, b, sizeof b, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0) return false;
  }
}

}  // namespace dp::test
