#include "gloo_sockets.hpp"

#include <dirent.h>
#include <gloo/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "dp/params.hpp"
#include "dp/unique_fd.hpp"

namespace dp::detail {
namespace {

bool same_endpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

}  // namespace

std::shared_ptr<gloo::transport::Device> create_device(const std::string& host, int loop_nice) {
  std::shared_ptr<gloo::transport::Device> device;
  std::exception_ptr failed;
  std::thread helper([&] {
    // Best effort: a failure leaves the loop at the caller's priority.
    if (loop_nice > 0) {
      const int tid = static_cast<int>(gettid());
      errno = 0;
      const int now = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
      if (errno == 0) setpriority(PRIO_PROCESS, static_cast<id_t>(tid), now + loop_nice);
    }
    try {
      gloo::transport::tcp::attr attr;
      attr.hostname = host;
      device = gloo::transport::tcp::CreateDevice(attr);
    } catch (...) {
      failed = std::current_exception();
    }
  });
  helper.join();
  if (failed) std::rethrow_exception(failed);
  return device;
}

void GlooSockets::record(gloo::Context& ctx, int self_rank) {
  std::lock_guard<std::mutex> lock(m_);
  for (int i = 0; i < ctx.size; ++i) {
    if (i == self_rank) continue;
    auto& pair = ctx.getPair(i);
    if (!pair) continue;
    // Each connected pair reports its socket's own local address (ip:port).
    // Where gloo accepts every pair on one listening socket per device, the
    // accepted sockets share that address with the listener (and only with
    // it: each communicator has its own device).
    if (auto* a = dynamic_cast<const gloo::transport::tcp::Address*>(&pair->address())) {
      local_.push_back(a->getSockaddr());
    }
  }
}

// Shuts down the connected sockets bound to those addresses, never a
// listener: gloo's loop thread dies (EnforceNotMet in accept) when the socket
// it listens on fails, and a listener has no peer.
void GlooSockets::shut_down() {
  std::lock_guard<std::mutex> lock(m_);
  if (done_ || local_.empty()) return;
  done_ = true;
  UniqueDir dir("/proc/self/fd");
  while (const dirent* e = dir ? dir.next() : nullptr) {
    const auto fd = parse_whole_number(e->d_name, 0, INT_MAX);  // skips "." and ".."
    if (!fd || *fd == dir.fd()) continue;
    const int s = static_cast<int>(*fd);
    sockaddr_storage ss{}, peer{};
    socklen_t len = sizeof(ss), peer_len = sizeof(peer);
    if (getsockname(s, reinterpret_cast<sockaddr*>(&ss), &len) != 0 ||
        getpeername(s, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
      continue;
    for (const auto& want : local_) {
      if (same_endpoint(ss, want)) {
        ::shutdown(s, SHUT_RDWR);
        break;
      }
    }
  }
}

}  // namespace dp::detail
