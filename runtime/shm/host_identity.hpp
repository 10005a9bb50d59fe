// Which ranks can share memory: processes of one kernel boot that see the
// same IPC, mount, pid and network namespaces (so /dev/shm, pids and "this
// machine" mean the same to both), on the same Slurm node. The node name
// matters on test clusters that run several slurmd on one machine: their
// "nodes" must talk TCP as real ones would.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dp::detail {

// A readable description of this process's domain, from /proc and
// SLURMD_NODENAME; parts that cannot be read are left empty.
std::string shared_memory_domain();

// 128-bit digest of a domain description, for exchanging it in fixed size.
std::array<uint64_t, 2> domain_digest(const std::string& domain) noexcept;

// Where each rank sits, from every rank's digest (index = rank).
struct HostGroups {
  std::vector<int> local_ranks;  // job ranks on my host, ascending: [local rank]
  int local_rank = 0;            // my index in local_ranks; 0 leads the host
  std::vector<int> leaders;      // each host's leader, ascending
  int leader_index = -1;         // my index in leaders, -1 if I do not lead
  int largest_host = 0;          // most ranks on any one host
  bool single_host() const { return leaders.size() == 1; }
};
HostGroups group_by_host(const std::vector<std::array<uint64_t, 2>>& digests, int rank);

}  // namespace dp::detail
