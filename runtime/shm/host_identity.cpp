#include "host_identity.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "dp/bounded_read.hpp"

namespace dp::detail {
namespace {

std::string first_line(const char* path) {
  const std::string text = read_bounded(path, 256);
  return text.substr(0, text.find('\n'));
}

std::string link_target(const char* path) {
  char buf[128];
  const ssize_t n = ::readlink(path, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

uint64_t fnv1a(const std::string& s, uint64_t h) noexcept {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string shared_memory_domain() {
  const char* node = std::getenv("SLURMD_NODENAME");
  return "boot=" + first_line("/proc/sys/kernel/random/boot_id") +
         " ipc=" + link_target("/proc/self/ns/ipc") + " mnt=" + link_target("/proc/self/ns/mnt") +
         " pid=" + link_target("/proc/self/ns/pid") + " net=" + link_target("/proc/self/ns/net") +
         " node=" + (node ? node : "");
}

std::array<uint64_t, 2> domain_digest(const std::string& domain) noexcept {
  // Two FNV-1a passes from different offsets: collisions are not a concern
  // between a job's hosts, and a wrong "same host" is caught anyway when the
  // peers cannot open the segment.
  return {fnv1a(domain, 0xcbf29ce484222325ULL), fnv1a(domain, 0x84222325cbf29ce4ULL)};
}

HostGroups group_by_host(const std::vector<std::array<uint64_t, 2>>& digests, int rank) {
  std::map<std::array<uint64_t, 2>, std::vector<int>> hosts;
  for (size_t r = 0; r < digests.size(); ++r) hosts[digests[r]].push_back(static_cast<int>(r));
  HostGroups g;
  for (const auto& [digest, ranks] : hosts) {
    g.leaders.push_back(ranks.front());
    g.largest_host = std::max(g.largest_host, static_cast<int>(ranks.size()));
  }
  std::sort(g.leaders.begin(), g.leaders.end());
  g.local_ranks = hosts[digests[static_cast<size_t>(rank)]];
  g.local_rank = static_cast<int>(std::find(g.local_ranks.begin(), g.local_ranks.end(), rank) -
                                  g.local_ranks.begin());
  if (g.local_rank == 0) {
    g.leader_index =
        static_cast<int>(std::find(g.leaders.begin(), g.leaders.end(), rank) - g.leaders.begin());
  }
  return g;
}

}  // namespace dp::detail
