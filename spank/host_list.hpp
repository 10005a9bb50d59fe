// Host list expansion at the Slurm edge: libslurm's slurm_hostlist_*, never
// a home-made parser ("gpu-a[001-003,010],login2" has too many corner cases).
#pragma once

#include <string>
#include <vector>

#include "dp/result.hpp"

namespace dp::spank {

Result<std::vector<std::string>> expand_host_list(const char* list);

}  // namespace dp::spank
