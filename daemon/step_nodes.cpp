#include "step_nodes.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace dp::daemon {
namespace {

std::string from_v4(const in_addr& a) {
  char buf[INET_ADDRSTRLEN] = {};
  return inet_ntop(AF_INET, &a, buf, sizeof buf) ? buf : "";
}

std::string from_v6(const in6_addr& a) {
  if (IN6_IS_ADDR_V4MAPPED(&a)) {
    in_addr v4;
    std::memcpy(&v4, a.s6_addr + 12, 4);
    return from_v4(v4);
  }
  char buf[INET6_ADDRSTRLEN] = {};
  return inet_ntop(AF_INET6, &a, buf, sizeof buf) ? buf : "";
}

std::string from_sockaddr(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) return from_v4(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr);
  if (sa->sa_family == AF_INET6)
    return from_v6(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  return {};
}

void resolve(const std::string& name, std::vector<std::string>& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0 || !found) return;
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> ai(found, freeaddrinfo);
  for (const addrinfo* a = found; a; a = a->ai_next)
    if (auto s = from_sockaddr(a->ai_addr); !s.empty()) out.push_back(std::move(s));
}

}  // namespace

std::string canonical_address(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return {};
  const std::string t(text);
  in_addr v4;
  if (inet_pton(AF_INET, t.c_str(), &v4) == 1) return from_v4(v4);
  in6_addr v6;
  if (inet_pton(AF_INET6, t.c_str(), &v6) == 1) return from_v6(v6);
  return {};
}

std::vector<std::string> step_node_addresses(std::string_view list, int max_lookups) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a < list.size()) {
    const size_t b = std::min(list.find_first_of(" ,", a), list.size());
    const std::string_view word = list.substr(a, b - a);
    a = b + 1;
    if (word.empty()) continue;
    if (auto n = canonical_address(word); !n.empty()) {
      out.push_back(std::move(n));
    } else if (max_lookups > 0 && word.size() <= 255) {
      --max_lookups;
      resolve(std::string(word), out);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string peer_address(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return {};
  return from_sockaddr(reinterpret_cast<const sockaddr*>(&sa));
}

}  // namespace dp::daemon
