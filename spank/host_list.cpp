#include "host_list.hpp"

#include <cstdlib>

#include "slurm_headers.hpp"

namespace dp::spank {

Result<std::vector<std::string>> expand_host_list(const char* list) {
  if (list == nullptr || *list == '\0')
    return make_error(Errc::internal, "Slurm gave the step an empty node list");
  slurm::HostList hl = slurm_hostlist_create(list);
  if (hl == nullptr)
    return make_error(Errc::internal, std::string("cannot expand node list '") + list + "'");
  std::vector<std::string> hosts;
  while (char* h = slurm_hostlist_shift(hl)) {
    hosts.emplace_back(h);
    std::free(h);  // slurm_hostlist_shift returns malloc()ed memory
  }
  slurm_hostlist_destroy(hl);
  return hosts;
}

}  // namespace dp::spank
